package pages

import (
	"cmp"
	"encoding/json"
	"strconv"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/views"
)

// SessionView is what a recorded session's page (/ui/sessions/{id})
// shows: its facts, and the first page of its transcript, steps and
// artifacts. The page's fragments (a later page, a live tail, a refreshed
// part) are rendered from the same type with only their part set.
type SessionView struct {
	*views.Session
	Path string // the page's own path, /ui/sessions/{id}
	// Own says the viewer is the session's member. Only they may follow
	// what the page links to beyond the session itself, each read as the
	// member's own: the Library files it sent (trace.CanRead), its plan
	// (trace.OfPlan), its artifacts' traces (trace.OfID) and its task's
	// remote session. An org admin reading another member's session is
	// shown those as plain ids, never a link to a 404.
	Own        bool
	Transcript TranscriptPart
	Steps      StepsPart
	Artifacts  ArtifactsPart
}

// TranscriptPart is one page of a session's transcript, its holes in place.
type TranscriptPart struct {
	Lines []recorder.Line
	Start int64  // the after this page was read from
	Next  string // the URL of the page after this one ("" = none)
	// Tail is the URL this page is followed at while the session runs
	// ("" = it is not: an earlier page, or the session has ended), after
	// the seq After.
	Tail  string
	After int64
}

// StepsPart is one page of a session's steps with their observations.
type StepsPart struct {
	Steps []StepLine
	Next  string // the URL of the page after this one ("" = none)
	// Tail is the URL this page is followed at while the session runs, as
	// TranscriptPart's, but by the run's observations: after the
	// observation After, a new step comes, and a step shown comes again
	// when a result lands on it later (its item replaces the one shown).
	Tail  string
	After int
}

// ArtifactsPart is one page of the artifacts a session pushed.
type ArtifactsPart struct {
	Artifacts []recorder.Artifact
	Next      string // the URL of the page after this one ("" = none)
}

// StepLine is a step as its page shows it: what was done (the step's
// detail) and what came of it (its result observations), decoded from the
// recorder's JSON.
type StepLine struct {
	Idx        int
	Action     string
	Source     string
	SessionSeq *int64
	At         time.Time
	Detail     StepDetail
	Results    []StepResult
}

// StepDetail is what a step did, as the recorder writes a step's detail
// (recorder's describe: the keys of each action).
type StepDetail struct {
	Command        string          `json:"command"`
	Path           string          `json:"path"`
	ContentDigest  string          `json:"contentDigest"`
	Size           *int64          `json:"size"`
	ContentOmitted bool            `json:"contentOmitted"`
	ContentMissing bool            `json:"contentMissing"`
	ContentUnknown bool            `json:"contentUnknown"`
	ContentPushed  bool            `json:"contentPushed"`
	URL            string          `json:"url"`
	Server         string          `json:"server"`
	Tool           string          `json:"tool"`
	CallID         string          `json:"callId"`
	Arguments      json.RawMessage `json:"arguments"`
}

// FileRef is a file step's content as its page links it: Own says the
// viewer may open it (SessionView.Own).
type FileRef struct {
	Own    bool
	Detail StepDetail
}

// File is the step's content for a viewer who may (own) or may not open
// the session's files.
func (l StepLine) File(own bool) FileRef { return FileRef{Own: own, Detail: l.Detail} }

// StepResult is one result observation of a step: the session's own
// report of it, or (Source "mcp") what the MCP node saw of a call.
type StepResult struct {
	ExitCode   *int   `json:"exitCode"`
	Output     string `json:"output"`
	Status     any    `json:"status"` // a fetch's HTTP status (a number), an MCP call's ok or error
	IsError    bool   `json:"isError"`
	Error      string `json:"error"`
	DurationMs *int64 `json:"durationMs"`
	NoResult   bool   `json:"noResult"`
	Source     string `json:"source"`
	Action     string `json:"-"` // the step's
}

// Failed reports whether the result says the action failed: a non-zero
// exit, an MCP call the node saw end in error or the app said failed.
func (r StepResult) Failed() bool {
	return (r.ExitCode != nil && *r.ExitCode != 0) || r.Status == "error" || r.IsError || r.Error != ""
}

// StatusText is the result's status as words: a fetch's HTTP status, an
// MCP call's ok or error.
func (r StepResult) StatusText() string {
	switch s := r.Status.(type) {
	case float64:
		return strconv.FormatFloat(s, 'f', -1, 64)
	case string:
		return s
	}
	return ""
}

// StepLines decodes steps for their page. A detail or body that does not
// decode (a recorder older than its page) shows as the step's action
// alone.
func StepLines(steps []spine.Step) []StepLine {
	out := make([]StepLine, len(steps))
	for i, s := range steps {
		l := StepLine{Idx: s.Idx, Action: s.Action, Source: s.Source, SessionSeq: s.SessionSeq, At: s.At}
		_ = json.Unmarshal(s.Detail, &l.Detail)
		for _, o := range s.Observations {
			if s.Action == "file_read" || s.Action == "file_write" {
				break // their results repeat the detail's content keys
			}
			var r StepResult
			if o.Kind == spine.ObsResult && json.Unmarshal(o.Body, &r) == nil {
				r.Action = s.Action
				l.Results = append(l.Results, r)
			}
		}
		out[i] = l
	}
	return out
}

// maxShownOutput bounds the output a step shows: the API has all of it.
const maxShownOutput = 64 << 10

// Shown is the output the page shows: at most maxShownOutput bytes, cut
// at a character boundary.
func (r StepResult) Shown() string { return Cut(r.Output, maxShownOutput) }

// Cut is how many bytes of output the page leaves out.
func (r StepResult) Cut() int { return len(r.Output) - len(r.Shown()) }

// Bytes is the file's size, "" when the step named none.
func (d StepDetail) Bytes() string {
	if d.Size == nil {
		return ""
	}
	return formatBytes(*d.Size)
}

func formatBytes(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return accounting.FormatInt(n) + " bytes"
}

// EndedWhen is when the session ended, "" while it runs.
func (v SessionView) EndedWhen() string {
	if v.EndedAt == nil {
		return ""
	}
	return when(*v.EndedAt)
}

// PlanRef is what the plan's page is found by: the plan's id when the
// start named one, else the planner run it served ("" = neither).
func (v SessionView) PlanRef() string { return cmp.Or(v.PlanID, v.ParentRunID) }
