package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/server"
	"github.com/spinehq/spine/streams"
)

// spine cancel ID asks the session's producer to stop, in words or as the
// API's JSON; a session that is not the caller's is the API's 404.
func TestCancelCommand(t *testing.T) {
	n, caughtUp := testNode(t)
	for _, id := range []string{"cc1", "cc2"} {
		start := spinetest.Start(id)
		start.Owner = &streams.Owner{Org: "dev", Member: "dev"}
		if _, err := n.Publisher.Publish(context.Background(), start, nil); err != nil {
			t.Fatal(err)
		}
	}
	caughtUp()

	out, err := capture(t, "cancel", "cc1", "--reason", "wrong branch")
	if err != nil || !strings.Contains(out, "cancel requested for session cc1") || !strings.Contains(out, "within 60s") {
		t.Fatalf("cancel: %v\n%s", err, out)
	}
	out, err = capture(t, "cancel", "--json", "cc2")
	var res server.CancelResult
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.SessionID != "cc2" || res.Control != "cancel" {
		t.Fatalf("cancel --json: %v\n%s", err, out)
	}
	_, err = capture(t, "cancel", "nope")
	var api *apiError
	if !errors.As(err, &api) || api.Status != 404 || api.Code != "not_found" {
		t.Fatalf("cancel a missing session: %v", err)
	}
	if _, err := capture(t, "cancel"); exitCode(err) != 2 {
		t.Fatalf("cancel without an ID: %v", err)
	}
}
