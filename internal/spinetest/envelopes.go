package spinetest

import (
	"bufio"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/spinehq/spine/streams"
)

// T0 is the time every built envelope counts from, so projections are
// deterministic across runs.
var T0 = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

func at(n int64) time.Time { return T0.Add(time.Duration(n) * time.Millisecond) }

// Start builds a session.start for org "acme", member "alice".
func Start(session string) *streams.Envelope {
	return &streams.Envelope{V: 1, Type: streams.TypeSessionStart, ID: session + "-start", At: at(0),
		SessionID: session, App: "claude-code", Kind: "run", Level: "strong", Workspace: "/w/" + session,
		Owner: &streams.Owner{Org: "acme", Member: "alice"}, WorkerID: "w1", Prompt: "fix the tests"}
}

// Text builds a stdout chunk.
func Text(session string, seq int64, text string) *streams.Envelope {
	return &streams.Envelope{V: 1, Type: streams.TypeSessionChunk, ID: fmt.Sprintf("%s-c%d", session, seq),
		At: at(seq), SessionID: session, Seq: seq, Stream: "stdout", Text: text}
}

// Stderr builds a stderr chunk.
func Stderr(session string, seq int64, text string) *streams.Envelope {
	e := Text(session, seq, text)
	e.Stream = "stderr"
	return e
}

// Event builds an event chunk.
func Event(session string, seq int64, ev *streams.Event) *streams.Envelope {
	return &streams.Envelope{V: 1, Type: streams.TypeSessionChunk, ID: fmt.Sprintf("%s-c%d", session, seq),
		At: at(seq), SessionID: session, Seq: seq, Stream: "event", Event: ev}
}

// Command builds a command event chunk.
func Command(session string, seq int64, cmd string) *streams.Envelope {
	code := 0
	return Event(session, seq, &streams.Event{Action: "command", Command: cmd, ExitCode: &code, Output: "ok\n"})
}

// Write builds a file_write event chunk.
func Write(session string, seq int64, path, content string) *streams.Envelope {
	return Event(session, seq, &streams.Event{Action: "file_write", Path: path, Content: content})
}

// End builds a session.end reporting model and effort.
func End(session, status, model, effort string) *streams.Envelope {
	code := 0
	if status != "done" {
		code = 1
	}
	return &streams.Envelope{V: 1, Type: streams.TypeSessionEnd, ID: session + "-end", At: at(100000),
		SessionID: session, Status: status, ExitCode: &code, Model: model, Effort: effort, Door: "session"}
}

// MCP builds an mcp.call record.
func MCP(session, callID, tool string) *streams.Envelope {
	d := int64(12)
	return &streams.Envelope{V: 1, Type: streams.TypeMCPCall, ID: session + "-mcp-" + callID, At: at(5000),
		SessionID: session, CallID: callID, Server: "memql", Tool: tool, Status: "ok", DurationMs: &d}
}

// Disconnect builds a worker.disconnect.
func Disconnect(worker, reason string) *streams.Envelope {
	return &streams.Envelope{V: 1, Type: streams.TypeWorkerDisconnect, ID: "disc-" + worker, At: at(90000),
		WorkerID: worker, Reason: reason}
}

// Telemetry builds a session.telemetry of Claude Code for org "acme",
// member "alice", n milliseconds after T0; its id is key's within the
// session and kind (a request's id, a tool use's), as a door's is.
func Telemetry(session string, n int64, key string, t *streams.Telemetry) *streams.Envelope {
	return &streams.Envelope{V: 1, Type: streams.TypeSessionTelemetry, ID: "tel-" + session + "-" + t.Kind + "-" + key,
		At: at(n), SessionID: session, App: "claude-code", AppSessionRef: "ref-" + session,
		Owner: &streams.Owner{Org: "acme", Member: "alice"}, Telemetry: t}
}

// Request builds a telemetry request from OTLP with the usage and cost
// given (either may be nil).
func Request(session string, n int64, requestID, model string, u *streams.Usage, cost *float64) *streams.Envelope {
	return Telemetry(session, n, requestID, &streams.Telemetry{Kind: streams.TelemetryRequest, Source: streams.TelemetryOTLP,
		RequestID: requestID, Model: model, Usage: u, TotalCost: cost})
}

// ToolUse builds a telemetry tool of the phase given, from a hook.
func ToolUse(session string, n int64, toolUseID, phase string) *streams.Envelope {
	ok, d := true, int64(38)
	return Telemetry(session, n, toolUseID+"-"+phase, &streams.Telemetry{Kind: streams.TelemetryTool,
		Source: streams.TelemetryHook, ToolUseID: toolUseID, Tool: "Bash", Phase: phase, Success: &ok, DurationMs: &d})
}

// ReadEnvelopes decodes a JSON-lines file of envelopes, failing the test on
// any line that is not one.
func ReadEnvelopes(t testing.TB, path string) []*streams.Envelope {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var out []*streams.Envelope
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), streams.MaxEnvelopeBytes+1024)
	for sc.Scan() {
		e, err := streams.Decode(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}
