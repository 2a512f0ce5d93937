package recorder_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/checksum"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
)

func cost(v float64) *float64 { return &v }

func usage(in, out, read, write int64) *streams.Usage {
	return &streams.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: read, CacheWriteTokens: write}
}

// resent is e as another door (or a later export) tells it: another
// envelope id, so JetStream keeps both and the projection must count one.
func resent(e *streams.Envelope, by string) *streams.Envelope {
	c := *e
	c.ID += "-" + by
	return &c
}

func telemetryEnd(session string, n int64) *streams.Envelope {
	return spinetest.Telemetry(session, n, "end", &streams.Telemetry{Kind: streams.TelemetryEnd,
		Source: streams.TelemetryHook, Reason: "other"})
}

// hookCommand is a hook's PostToolUse of a Bash command: a command step.
func hookCommand(session string, n int64, toolUseID, command string) *streams.Envelope {
	e := spinetest.ToolUse(session, n, toolUseID, streams.PhasePost)
	code := 0
	e.Telemetry.Event = &streams.Event{Action: "command", Command: command, ExitCode: &code, Output: "ok\n"}
	return e
}

// telemetryMCP is a hook's PostToolUse of an MCP tool: an mcp_call step.
func telemetryMCP(session string, n int64, toolUseID string) *streams.Envelope {
	e := spinetest.ToolUse(session, n, toolUseID, streams.PhasePost)
	e.Telemetry.Tool = "mcp__github__search"
	e.Telemetry.Event = &streams.Event{Action: "mcp_call", Server: "github", Tool: "search", CallID: toolUseID}
	return e
}

// stepList is a session's steps as "idx:action:source", in order.
func stepList(t *testing.T, h *spinetest.Harness, id string) string {
	t.Helper()
	var out []string
	for _, st := range steps(t, h, id).Steps {
		out = append(out, fmt.Sprintf("%d:%s:%s", st.Idx, st.Action, st.Source))
	}
	return strings.Join(out, ",")
}

// ledger reads a session's requests as "id:cost" in request order.
func ledger(t *testing.T, id string, h *spinetest.Harness) string {
	t.Helper()
	var got string
	if err := h.Pool.QueryRow(ctx, `SELECT coalesce(string_agg(request_id || ':' || coalesce(cost::text, '-'), ','
		ORDER BY request_id), '') FROM session_requests WHERE session_id = $1`, id).Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

func usageOf(t *testing.T, s *recorder.Session) *streams.Usage {
	t.Helper()
	if s.Usage == nil {
		return nil
	}
	var u streams.Usage
	if err := json.Unmarshal(s.Usage, &u); err != nil {
		t.Fatal(err)
	}
	return &u
}

// The first telemetry of an id nobody holds creates the session: kind run,
// the app, its own id and machine, running from the event's time, origin
// telemetry, claimed for its owner, with its recording run.
func TestTelemetryCreatesTheSession(t *testing.T) {
	h := running(t)
	e := spinetest.Request("t1", 10, "req_1", "claude-opus-4-8", usage(3, 40, 900, 12), cost(0.0042))
	e.WorkerID, e.Billing = "host-1", "subscription"
	h.Publish(e)
	h.WaitCaughtUp()
	s := session(t, h, "t1")
	if s.Kind != "run" || s.App != "claude-code" || s.AppSessionRef != "ref-t1" || s.WorkerID != "host-1" ||
		s.Status != recorder.StatusRunning || s.Ended() || !s.StartedAt.Equal(e.At) || s.Origin != recorder.OriginTelemetry ||
		s.Billing != "subscription" || s.SessionRunID != recorder.RunID("t1") {
		t.Fatalf("session = %+v", s)
	}
	if n := count(t, h, `SELECT count(*) FROM session_owners WHERE session_id = 't1' AND org = 'acme' AND member = 'alice'`); n != 1 {
		t.Fatalf("%d claims of t1 for alice", n)
	}
	if n := count(t, h, `SELECT count(*) FROM runs WHERE id = $1 AND session_id = 't1'`, recorder.RunID("t1")); n != 1 {
		t.Fatalf("%d recording runs", n)
	}
	if dl := deadLetters(t, h); len(dl) != 0 {
		t.Fatalf("dead letters: %+v", dl)
	}
}

// A telemetry session's usage and cost are its ledger's: each request
// once however often it is told (in one batch, in another, by two doors),
// tokens summed, the cost the exact sum of those reported (a request with
// none adds nothing; none at all is no cost), model and effort the latest
// request's.
func TestTelemetryLedgerSumsEachRequestOnce(t *testing.T) {
	h := running(t)
	r1 := spinetest.Request("l1", 10, "req_1", "claude-haiku", usage(1, 2, 3, 4), cost(0.1))
	r2 := spinetest.Request("l1", 20, "req_2", "claude-opus-4-8", usage(10, 20, 30, 40), nil)
	r3 := spinetest.Request("l1", 30, "req_3", "claude-opus-4-8", usage(100, 200, 300, 400), cost(0.2))
	r3.Telemetry.Effort = "high"
	h.Publish(r1, resent(r1, "hook"), r2)
	h.WaitCaughtUp()
	h.Publish(resent(r1, "export"), r3, resent(r2, "export"))
	codex := spinetest.Request("l2", 10, "codex:2026-11-01T09:00:00.01Z:3", "gpt-5", nil, nil)
	codex.ID = "tel-l2-codex-3"
	h.Publish(codex)
	h.WaitCaughtUp()

	if got := ledger(t, "l1", h); got != "req_1:0.1,req_2:-,req_3:0.2" {
		t.Fatalf("ledger = %s", got)
	}
	s := session(t, h, "l1")
	if u := usageOf(t, s); u == nil || !u.SameCounts(*usage(111, 222, 333, 444)) {
		t.Fatalf("usage = %s", s.Usage)
	}
	var rowCost string
	if err := h.Pool.QueryRow(ctx, `SELECT total_cost::text FROM sessions WHERE id = 'l1'`).Scan(&rowCost); err != nil {
		t.Fatal(err)
	}
	if rowCost != "0.3" || s.Model != "claude-opus-4-8" || s.Effort != "high" {
		t.Fatalf("cost %s model %q effort %q, want 0.3 (not a float's 0.30000000000000004), the latest request's", rowCost, s.Model, s.Effort)
	}
	if s := session(t, h, "l2"); s.Usage != nil || s.TotalCost != nil || s.Model != "gpt-5" {
		t.Fatalf("a session whose requests reported nothing: usage %s cost %v model %q", s.Usage, s.TotalCost, s.Model)
	}
}

// A tool's post is one step with its observation (source telemetry, the
// tool use's id as its call id); told again by the other door, in the same
// batch or a later one, it is the same step. Its pre only marks the
// session busy.
func TestTelemetryToolsAreStepsOnce(t *testing.T) {
	h := running(t)
	code := 3
	hook := spinetest.ToolUse("k1", 20, "toolu_1", streams.PhasePost)
	hook.Telemetry.Event = &streams.Event{Action: "command", Command: "make test", ExitCode: &code, Output: "FAIL\n"}
	failed := false
	hook.Telemetry.Success, hook.Telemetry.ErrorType = &failed, "ShellError"
	otlp := spinetest.ToolUse("k1", 25, "toolu_1", streams.PhasePost)
	otlp.ID, otlp.Telemetry.Source = otlp.ID+"-otlp", streams.TelemetryOTLP
	other := spinetest.ToolUse("k1", 30, "toolu_2", streams.PhasePost)
	h.Publish(spinetest.ToolUse("k1", 10, "toolu_1", streams.PhasePre), hook, otlp)
	h.WaitCaughtUp()
	pre := spinetest.ToolUse("k1", 40, "toolu_3", streams.PhasePre)
	h.Publish(resent(otlp, "again"), other, resent(hook, "export"), pre)
	h.WaitCaughtUp()

	p := steps(t, h, "k1")
	if len(p.Steps) != 2 {
		t.Fatalf("%d steps, want 2: %+v", len(p.Steps), p.Steps)
	}
	st := p.Steps[0]
	d := decodeMap(t, st.Detail)
	if st.Action != "command" || st.Source != spine.SourceTelemetry || st.CallID != "toolu_1" || st.SessionSeq != nil ||
		d["command"] != "make test" || d["tool"] != "Bash" || d["success"] != false || d["errorType"] != "ShellError" ||
		d["durationMs"] != float64(38) {
		t.Fatalf("step = %+v, detail %v", st, d)
	}
	if len(st.Observations) != 1 {
		t.Fatalf("observations = %+v", st.Observations)
	}
	if r := decodeMap(t, st.Observations[0].Body); r["output"] != "FAIL\n" || r["exitCode"] != float64(3) || r["success"] != false {
		t.Fatalf("observation = %v", r)
	}
	if p.Steps[1].Action != "tool" || p.Steps[1].CallID != "toolu_2" {
		t.Fatalf("an OTLP tool without event: %+v", p.Steps[1])
	}
	s := session(t, h, "k1")
	if s.RecordedSteps != 2 || !s.UpdatedAt.Equal(pre.At) {
		t.Fatalf("recordedSteps %d, updatedAt %v: want 2 and the pre's time %v", s.RecordedSteps, s.UpdatedAt, pre.At)
	}
	if dl := deadLetters(t, h); len(dl) != 0 {
		t.Fatalf("dead letters: %+v", dl)
	}
}

// An end ends a telemetry session done with its ledger's usage, cost and
// model, its transcript written; a request told after it (exporters batch:
// Claude Code's last export comes after SessionEnd) still counts on the
// ended row. Another door's session ignores a telemetry end.
func TestTelemetryEndAndALateRequest(t *testing.T) {
	h := running(t)
	h.Publish(spinetest.Request("e1", 10, "req_1", "claude-opus-4-8", usage(1, 1, 0, 0), cost(0.5)), telemetryEnd("e1", 50))
	h.Publish(spinetest.Start("e2"), telemetryEnd("e2", 50))
	h.WaitCaughtUp()
	s := session(t, h, "e1")
	if s.Status != "done" || s.EndedAt == nil || !s.EndedAt.Equal(spinetest.T0.Add(50*time.Millisecond)) || s.Error != "" ||
		s.Model != "claude-opus-4-8" || s.TotalCost == nil || *s.TotalCost != 0.5 || s.TranscriptFileID == "" {
		t.Fatalf("ended telemetry session = %+v", s)
	}
	if s := session(t, h, "e2"); s.Ended() {
		t.Fatalf("a telemetry end ended another door's session: %+v", s)
	}

	h.Publish(spinetest.Request("e1", 60, "req_2", "claude-sonnet-5", usage(2, 2, 0, 0), cost(0.25)))
	h.WaitCaughtUp()
	s = session(t, h, "e1")
	if u := usageOf(t, s); u == nil || u.InputTokens != 3 || s.TotalCost == nil || *s.TotalCost != 0.75 ||
		s.Model != "claude-sonnet-5" || s.Status != "done" {
		t.Fatalf("after a late request: usage %s cost %v model %q status %s", s.Usage, s.TotalCost, s.Model, s.Status)
	}
	if dl := deadLetters(t, h); len(dl) != 0 {
		t.Fatalf("dead letters: %+v", dl)
	}
}

// A start of the same owner after the telemetry applies over the telemetry
// session: one session, the start's kind, workspace and plan step (its run
// linked), the door's from then on (its chunks, usage, steps and end). A
// tool both told (an MCP call: the same id by both) is one step; the
// telemetry's other steps go with their observations, as the door records
// those tools again (a Bash command, told by its hook before the start,
// recorded once), and its steps come after every step the run had. A
// session whose telemetry had ended runs again for the door and ends once.
func TestStartMergesIntoTheTelemetrySession(t *testing.T) {
	h := running(t)
	h.Publish(spinetest.Request("m1", 1, "req_1", "claude-opus-4-8", usage(1, 1, 0, 0), cost(0.1)),
		hookCommand("m1", 3, "toolu_1", "ls"), telemetryMCP("m1", 5, "toolu_9"),
		spinetest.Request("m2", 1, "req_1", "claude-opus-4-8", nil, nil), telemetryEnd("m2", 2))
	h.WaitCaughtUp()
	start := spinetest.Start("m1")
	start.Kind, start.AppSessionRef, start.ParentRunID, start.StepID, start.PlanID = "attach", "ref-m1", "plan-run-1", "step-1", "plan-1"
	mcp := spinetest.Event("m1", 1, &streams.Event{Action: "mcp_call", Server: "github", Tool: "search", CallID: "toolu_9"})
	end := spinetest.End("m1", "done", "claude-opus-4-8", "")
	end.Usage = usage(7, 7, 0, 0)
	h.Publish(start, mcp, spinetest.Command("m1", 2, "ls"), spinetest.Start("m2"), spinetest.Text("m2", 1, "hi\n"))
	h.WaitCaughtUp()
	h.Publish(end, spinetest.End("m2", "failed", "", ""))
	h.WaitCaughtUp()

	s := session(t, h, "m1")
	if s.Origin != "" || s.Kind != "attach" || s.Workspace != "/w/m1" || s.PlanID != "plan-1" || s.StepID != "step-1" ||
		s.PromptDigest == "" || s.RecordedSteps != 2 || s.LastSeq != 2 || s.Status != "done" {
		t.Fatalf("merged session = %+v", s)
	}
	if u := usageOf(t, s); u == nil || u.InputTokens != 7 {
		t.Fatalf("the door's end's usage: %s", s.Usage)
	}
	if n := count(t, h, `SELECT count(*) FROM runs WHERE id = $1 AND parent_run_id = 'plan-run-1' AND parent_step_id = 'step-1'`,
		recorder.RunID("m1")); n != 1 {
		t.Fatal("the start's plan step is not linked to the session's run")
	}
	if n := count(t, h, `SELECT count(*) FROM steps WHERE run_id = $1 AND call_id = 'toolu_9'`, recorder.RunID("m1")); n != 1 {
		t.Fatalf("%d steps for the one MCP call", n)
	}
	if got := stepList(t, h, "m1"); got != "2:mcp_call:telemetry,3:command:session" {
		t.Fatalf("steps %s, want the MCP call's and the door's ls after it", got)
	}
	if n := count(t, h, `SELECT count(*) FROM observations WHERE run_id = $1 AND step_id = $2`, recorder.RunID("m1"),
		spine.StepID(recorder.RunID("m1"), 2)); n != 1 {
		t.Fatalf("%d observations of the MCP call, want its telemetry's", n)
	}
	if n := count(t, h, `SELECT count(*) FROM observations WHERE run_id = $1 AND step_id <> ALL($2)`, recorder.RunID("m1"),
		[]string{spine.StepID(recorder.RunID("m1"), 2), spine.StepID(recorder.RunID("m1"), 3)}); n != 0 {
		t.Fatalf("%d observations of steps no longer there", n)
	}
	s2 := session(t, h, "m2")
	if s2.Status != "failed" || s2.Origin != "" || s2.LastSeq != 1 {
		t.Fatalf("reopened session = %+v", s2)
	}
	if n := count(t, h, `SELECT count(*) FROM artifacts WHERE session_id = 'm2' AND kind = 'transcript' AND digest = $1`,
		s2.TranscriptFileID); n != 1 {
		t.Fatalf("%d transcript artifacts of the door's end", n)
	}
	if n := count(t, h, `SELECT count(*) FROM sessions`); n != 2 {
		t.Fatalf("%d sessions, want 2", n)
	}
	if dl := deadLetters(t, h); len(dl) != 0 {
		t.Fatalf("dead letters: %+v", dl)
	}
}

// Telemetry for a session id another owner holds (by a start, by its own
// telemetry, or by a claim at the door) records nothing and is the dead
// letter session_exists, the telemetry's owner's; so is a start of another
// owner's over a telemetry session (duplicate_start, as ever).
func TestTelemetryForAnotherOwnersSessionIsDeadLettered(t *testing.T) {
	h := running(t)
	bob := &streams.Owner{Org: "acme", Member: "bob"}
	if _, err := recorder.ClaimSessions(ctx, h.Pool, map[string]streams.Owner{"o3": alice}, nil); err != nil {
		t.Fatal(err)
	}
	h.Publish(spinetest.Start("o1"), spinetest.Request("o2", 1, "req_1", "m", nil, nil))
	h.WaitCaughtUp()
	var bobs []*streams.Envelope
	for _, id := range []string{"o1", "o2", "o3"} {
		e := spinetest.Request(id, 2, "req_b", "m", usage(9, 9, 9, 9), cost(9))
		e.ID, e.Owner = e.ID+"-bob", bob
		bobs = append(bobs, e)
	}
	bobStart := spinetest.Start("o2")
	bobStart.ID, bobStart.Owner = "o2-start-bob", bob
	h.Publish(append(bobs, bobStart)...)
	h.WaitCaughtUp()

	var got []string
	for _, d := range deadLetters(t, h) {
		got = append(got, d.Reason+" "+d.Subject)
	}
	want := "session_exists spine.session.o1.telemetry, session_exists spine.session.o2.telemetry, " +
		"session_exists spine.session.o3.telemetry, duplicate_start spine.session.o2.start"
	if strings.Join(got, ", ") != want {
		t.Fatalf("dead letters %q, want %s", got, want)
	}
	if n := count(t, h, `SELECT count(*) FROM dead_letters WHERE org = 'acme' AND member = 'bob'`); n != 4 {
		t.Fatalf("%d of the dead letters are bob's, want 4", n)
	}
	if n := count(t, h, `SELECT count(*) FROM session_requests WHERE request_id = 'req_b'`); n != 0 {
		t.Fatalf("bob's requests are in %d ledgers", n)
	}
	if n := count(t, h, `SELECT count(*) FROM sessions WHERE member = 'bob' OR id = 'o3'`); n != 0 {
		t.Fatalf("%d sessions for bob or the claimed id", n)
	}
	if s := session(t, h, "o2"); s.Origin != recorder.OriginTelemetry || s.Member != "alice" {
		t.Fatalf("o2 = %+v", s)
	}
}

// A telemetry session gone quiet for the telemetry idle time ends done (no
// error, its ledger's usage), long before the idle timeout; a session a
// door started, as quiet, keeps running until that.
func TestQuietTelemetrySessionEndsDone(t *testing.T) {
	h := running(t)
	c := &clock{}
	w, err := recorder.NewSweeper(recorder.SweeperConfig{Pool: h.Pool, Publisher: h.Pub, IdleTimeout: idle,
		CancelGrace: grace, TelemetryIdle: 10 * time.Minute, Now: c.Now, Logger: spinetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	h.Publish(spinetest.Request("q1", 1, "req_1", "claude-opus-4-8", usage(5, 5, 0, 0), cost(0.5)), spinetest.Start("q2"))
	h.WaitCaughtUp()
	last, _ := sweepTimes(t, h, "q1")
	if n := sweep(t, h, w, c, last.Add(10*time.Minute-time.Second)); n != 0 {
		t.Fatalf("swept %d before the telemetry idle time", n)
	}
	if n := sweep(t, h, w, c, last.Add(10*time.Minute+time.Second)); n != 1 {
		t.Fatalf("swept %d at the telemetry idle time, want 1", n)
	}
	s := session(t, h, "q1")
	if s.Status != "done" || s.Error != "" || !s.Ended() || s.Model != "claude-opus-4-8" || s.TotalCost == nil || *s.TotalCost != 0.5 {
		t.Fatalf("quiet telemetry session = %+v", s)
	}
	if s := session(t, h, "q2"); s.Ended() {
		t.Fatalf("a door's session ended at the telemetry idle time: %+v", s)
	}
}

// A rebuild of telemetry makes the same projections however the log is cut
// into batches: a request told in the end's batch or after it, a start in
// its telemetry's batch or after it.
func TestTelemetryRebuildsTheSame(t *testing.T) {
	h := spinetest.New(t)
	h.Publish(telemetryWorkload(0)...)
	h.Publish(telemetryWorkload(1)...)
	want := projectInto(t, h, 500)
	for _, size := range []int{1, 2, 3, 7} {
		got := projectInto(t, h, size)
		for _, tbl := range checksum.Diff(want, got) {
			t.Errorf("batches of %d: %s is %s, in one batch %s", size, tbl, got[tbl], want[tbl])
		}
	}
}

// projectInto projects the whole log into a new database in batches of
// size and returns its checksums.
func projectInto(t *testing.T, h *spinetest.Harness, size int) map[string]string {
	t.Helper()
	pool, _ := pgtest.New(t)
	p := h.StartRecorder(&spinetest.RecorderOpts{Pool: pool, BatchSize: size})
	h.WaitCaughtUp()
	p.Stop()
	sums, err := checksum.Projections(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	return sums
}
