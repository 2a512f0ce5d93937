package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/streams"
)

// remoteSession.create and send over MCP hold their fields to the same
// bounds as HTTP: over one is a tool error with code field_too_long that
// names the field and never repeats the value.
func TestMCPFieldBounds(t *testing.T) {
	e := newEnv(t)
	cs, err := e.connect(e.token("acme", "alice", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	later := time.Now().Add(time.Hour)
	over := func(n int) string { return strings.Repeat("z", n+1) }
	for name, args := range map[string]map[string]any{
		"title":        {"target": "desktop", "instructions": "x", "title": over(streams.MaxNameLen), "deliverBy": later},
		"instructions": {"target": "desktop", "instructions": over(streams.MaxInstructionsLen), "deliverBy": later},
	} {
		res := e.execute(cs, "remoteSession.create", args)
		body := structured[map[string]map[string]string](t, res)["error"]
		if !res.IsError || body["code"] != streams.ReasonFieldTooLong || !strings.Contains(body["message"], name) ||
			strings.Contains(text(res), "zzzzzzzz") {
			t.Fatalf("create with a long %s = %.300s", name, text(res))
		}
	}
}
