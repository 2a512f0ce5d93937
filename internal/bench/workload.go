package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/spinehq/spine/streams"
)

// Owner and app of every benchmark session.
const (
	benchOrg     = "bench"
	benchMember  = "bench"
	benchApp     = "claude-code"
	benchCommand = "go test ./..."
)

// textVariety is how many distinct texts chunks cycle through: enough that
// nothing downstream sees one repeated string, few enough to build instantly.
const textVariety = 64

// workload builds the envelopes a run sends: claude-code sessions whose
// chunks are stdout text or, for an evenly spread fraction, command events
// whose output is text of the same size.
type workload struct {
	runID  string
	events float64
	texts  []string
}

func newWorkload(runID string, payload int, events float64) *workload {
	rng := rand.New(rand.NewPCG(1, 2))
	texts := make([]string, textVariety)
	for i := range texts {
		texts[i] = randomText(rng, payload)
	}
	return &workload{runID: runID, events: events, texts: texts}
}

// words are the vocabulary of chunk text: build-log prose, nothing the
// recorder's redaction would match.
var words = strings.Fields(`ok build test package func return error passed failed running
	compile module file line the of in to with main handler request response value
	checking done step cache hit miss linking tests coverage`)

func randomText(rng *rand.Rand, size int) string {
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()[:size]
}

// sessionID names session i of a phase ("t" throughput, "l" latency).
func (w *workload) sessionID(phase string, i int) string {
	return fmt.Sprintf("bench-%s-%s%04d", w.runID, phase, i)
}

func (w *workload) start(id string, at time.Time) *streams.Envelope {
	return &streams.Envelope{V: streams.Version, Type: streams.TypeSessionStart, ID: id + "-start", At: at,
		SessionID: id, App: benchApp, Kind: "run", Owner: &streams.Owner{Org: benchOrg, Member: benchMember}}
}

func (w *workload) chunk(id string, seq int64, at time.Time) *streams.Envelope {
	e := &streams.Envelope{V: streams.Version, Type: streams.TypeSessionChunk,
		ID: fmt.Sprintf("%s-%d", id, seq), At: at, SessionID: id, Seq: seq}
	text := w.texts[seq%textVariety]
	if w.isEvent(seq) {
		exit := 0
		e.Stream = "event"
		e.Event = &streams.Event{Action: "command", Command: benchCommand, ExitCode: &exit, Output: text}
		return e
	}
	e.Stream, e.Text = "stdout", text
	return e
}

func (w *workload) end(id string, at time.Time) *streams.Envelope {
	exit := 0
	return &streams.Envelope{V: streams.Version, Type: streams.TypeSessionEnd, ID: id + "-end", At: at,
		SessionID: id, Status: "done", ExitCode: &exit}
}

// isEvent spreads events evenly: of seq 1..n, exactly ⌊n·events⌋ are events.
func (w *workload) isEvent(seq int64) bool {
	return math.Floor(float64(seq)*w.events) > math.Floor(float64(seq-1)*w.events)
}

// burst is the throughput phases' traffic: every session starts, then the
// sessions take turns chunk by chunk, as concurrent sessions would, then
// every session ends.
func (w *workload) burst(sessions, chunks int, at time.Time) []*streams.Envelope {
	ids := make([]string, sessions)
	out := make([]*streams.Envelope, 0, sessions*(chunks+2))
	for i := range ids {
		ids[i] = w.sessionID("t", i+1)
		out = append(out, w.start(ids[i], at))
	}
	for seq := int64(1); seq <= int64(chunks); seq++ {
		for _, id := range ids {
			out = append(out, w.chunk(id, seq, at))
		}
	}
	for _, id := range ids {
		out = append(out, w.end(id, at))
	}
	return out
}

// counts sum up what a list of envelopes sends.
type counts struct {
	messages, sessions, chunks, events int
	bytes                              int64
}

func (c *counts) add(e *streams.Envelope, size int) {
	c.messages++
	c.bytes += int64(size)
	switch {
	case e.Type == streams.TypeSessionStart:
		c.sessions++
	case e.Type == streams.TypeSessionChunk && e.Stream == "event":
		c.chunks++
		c.events++
	case e.Type == streams.TypeSessionChunk:
		c.chunks++
	}
}

func (c counts) plus(o counts) counts {
	return counts{messages: c.messages + o.messages, sessions: c.sessions + o.sessions,
		chunks: c.chunks + o.chunks, events: c.events + o.events, bytes: c.bytes + o.bytes}
}
