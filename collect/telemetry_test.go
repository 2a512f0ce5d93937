package collect

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/streams"
)

// promptHook posts Claude Code's UserPromptSubmit hook of the app session
// appID: spine makes the telemetry's session of it (kind run, origin
// telemetry), as when an app's telemetry reaches spine before the
// collector has read its transcript.
func promptHook(t *testing.T, a api, appID string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"session_id": appID, "hook_event_name": "UserPromptSubmit",
		"prompt_id": "p-" + appID, "prompt": "write a note"})
	if err := a.Do(context.Background(), http.MethodPost, "/v1/hooks/claude-code", body, nil); err != nil {
		t.Fatal(err)
	}
}

// runStart posts the start spine run sends for session id: kind run.
func runStart(t *testing.T, a api, id string) {
	t.Helper()
	e := streams.Envelope{V: streams.Version, Type: streams.TypeSessionStart, ID: "start-" + id,
		At: time.Now().UTC(), SessionID: id, App: "claude-code", Kind: "run"}
	data, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal([]json.RawMessage{data})
	if err := a.Do(context.Background(), http.MethodPost, "/v1/ingest", body, nil); err != nil {
		t.Fatal(err)
	}
}

// A session the apps' telemetry made is kind run, as spine run's are, but
// no door has started it (origin telemetry): the gate answers that spine
// has no start of it, so the collector records it. A session spine run
// started is still spine run's, and so is one spine run claimed on this
// machine though the telemetry made it first. The collector's pass then
// makes the telemetry's session its own: kind attach, the machine, the
// transcript's chunks. Without the origin (the gate answering from the
// kind alone) it left the session alone, with no transcript.
func TestTelemetrySessionIsCollected(t *testing.T) {
	a := testAPI(t)
	claims := t.TempDir()
	const collected, claimed, ran = "8122657c-fe54-4dc9-89a3-20049e8a84f7", "0b0c0d0e-0000-4000-8000-00000000000a", "ran-1"
	promptHook(t, a, collected)
	promptHook(t, a, claimed)
	runStart(t, a, ran)
	for _, id := range []string{collected, claimed, ran} {
		waitSession(t, a, id, "its kind-run session", func(s sessionRow) bool { return s.Kind == "run" })
	}
	if err := Claim(claims, apps.SessionID("claude-code", claimed)); err != nil {
		t.Fatal(err)
	}
	g := &gate{Sink: importer.NewHTTPSink(a, 1), claims: claims}
	for _, c := range []struct {
		id   string
		want apps.Recorded
	}{
		{collected, apps.Recorded{}},
		{claimed, apps.Recorded{Started: true, Kind: "run"}},
		{ran, apps.Recorded{Started: true, Kind: "run"}},
	} {
		if got, err := g.Recorded(context.Background(), c.id); err != nil || got != c.want {
			t.Errorf("gate: session %s is %+v (%v), want %+v", c.id, got, err, c.want)
		}
	}

	home := t.TempDir()
	writeCrud(t, home)
	c, err := New(Options{ClaudeDir: home, StatePath: filepath.Join(t.TempDir(), "state.json"), Machine: "m1",
		Sink: importer.NewHTTPSink(a, 500), ClaimsDir: claims})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitSession(t, a, collected, "the collector's session", func(s sessionRow) bool {
		return s.Kind == "attach" && s.Origin == "" && s.WorkerID == "m1" && s.LastSeq > 0
	})
}
