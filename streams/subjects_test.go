package streams_test

import (
	"strings"
	"testing"

	"github.com/spinehq/spine/streams"
)

func TestSubject(t *testing.T) {
	want := map[string]string{
		streams.TypeSessionStart:     "spine.session.s-1.start",
		streams.TypeSessionChunk:     "spine.session.s-1.chunk",
		streams.TypeSessionControl:   "spine.session.s-1.control",
		streams.TypeSessionEnd:       "spine.session.s-1.end",
		streams.TypeSessionUsage:     "spine.session.s-1.usage",
		streams.TypeWorkerDisconnect: "spine.worker.w-1.disconnect",
		streams.TypeMCPCall:          "spine.mcp.s-1.call",
		streams.TypeSessionTelemetry: "spine.session.s-1.telemetry",
	}
	for _, typ := range streams.Types {
		e, err := streams.Decode([]byte(fixtures[typ]))
		if err != nil {
			t.Fatalf("Decode %s: %v", typ, err)
		}
		if got := e.Subject(); got != want[typ] {
			t.Errorf("%s: Subject() = %q, want %q", typ, got, want[typ])
		}
		if err := streams.CheckSubject(e, want[typ]); err != nil {
			t.Errorf("%s: CheckSubject on its own subject: %v", typ, err)
		}
	}
}

func TestSubjectsAreInTheirStreams(t *testing.T) {
	cfgs := streams.StreamConfigs(1)
	for _, typ := range streams.Types {
		e, err := streams.Decode([]byte(fixtures[typ]))
		if err != nil {
			t.Fatalf("Decode %s: %v", typ, err)
		}
		if !matchesAny(e.Subject(), cfgs[0].Subjects) {
			t.Errorf("%s subject %q is not captured by %s %v", typ, e.Subject(), cfgs[0].Name, cfgs[0].Subjects)
		}
	}
	dlq := streams.DLQSubject(streams.StreamSessions, streams.ReasonUnknownApp)
	for _, c := range cfgs {
		if captured := matchesAny(dlq, c.Subjects); captured != (c.Name == streams.StreamDLQ) {
			t.Errorf("dead letter %q captured by %s: %v", dlq, c.Name, captured)
		}
	}
	if dlq != "spine.dlq.SPINE_SESSIONS.unknown_app" {
		t.Errorf("DLQSubject = %q", dlq)
	}
}

func TestCheckSubjectRejectsMismatch(t *testing.T) {
	e, err := streams.Decode([]byte(fixtures[streams.TypeSessionChunk]))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	for _, subject := range []string{
		"spine.session.s-2.chunk",   // another session
		"spine.session.s-1.start",   // another type
		"spine.mcp.s-1.call",        // another family
		"spine.session.s-1.chunk.x", // longer
		"",
	} {
		err := streams.CheckSubject(e, subject)
		rej, ok := streams.AsRejection(err)
		if !ok || rej.Reason != streams.ReasonSubject {
			t.Errorf("CheckSubject(%q) = %v, want %s", subject, err, streams.ReasonSubject)
		}
	}
}

// matchesAny reports whether subject matches one of the NATS filters.
func matchesAny(subject string, filters []string) bool {
	for _, f := range filters {
		if matchSubject(subject, f) {
			return true
		}
	}
	return false
}

func matchSubject(subject, filter string) bool {
	s, f := strings.Split(subject, "."), strings.Split(filter, ".")
	for i, tok := range f {
		if tok == ">" {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(s) == len(f)
}
