package node_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// A field over its bound never stops a projector: a session.end whose model
// is 3,000 characters would make a cost_days key past PostgreSQL's btree
// row limit and, stored, stop the accounting projector for good. At
// /v1/ingest it is refused with field_too_long; published straight to
// JetStream it is dead-lettered field_too_long by the recorder, skipped by
// accounting, and the next session is projected, router-call row and all.
func TestLongModelNeverStopsAProjector(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	long := strings.Repeat("m", 3000)
	code, body := f.do("POST", "/v1/ingest", alice, envelopes(t, spinetest.Start("s1"), spinetest.End("s1", "done", long, "high")))
	resp := decode[struct {
		Results []struct {
			Status int
			Error  *struct{ Code, Message string }
		}
	}](t, body)
	if code != http.StatusMultiStatus || len(resp.Results) != 2 || resp.Results[1].Status != 400 ||
		resp.Results[1].Error.Code != streams.ReasonFieldTooLong || !strings.Contains(resp.Results[1].Error.Message, "model") ||
		strings.Contains(resp.Results[1].Error.Message, "mmmmmmmm") {
		t.Fatalf("ingest of a 3,000-character model = %d %s", code, body)
	}

	publishUnvalidated(t, f, spinetest.Start("s2"), spinetest.End("s2", "done", long, "high"),
		spinetest.Start("s3"), spinetest.End("s3", "done", "claude-sonnet-4", "high"))
	f.waitCaughtUp()
	ctx := context.Background()
	var reason string
	err := f.n.Pool.QueryRow(ctx, `SELECT reason FROM dead_letters WHERE subject = $1`,
		streams.SessionSubject("s2", streams.TypeSessionEnd)).Scan(&reason)
	if err != nil || reason != streams.ReasonFieldTooLong {
		t.Fatalf("dead letter of s2's end: %q, %v; want %s", reason, err, streams.ReasonFieldTooLong)
	}
	var model string
	if err := f.n.Pool.QueryRow(ctx, `SELECT served_model FROM router_calls WHERE session_id = 's3'`).Scan(&model); err != nil || model != "claude-sonnet-4" {
		t.Fatalf("s3's router call: %q, %v", model, err)
	}
	if code, body := f.do("GET", "/v1/sessions/s3", alice, nil); code != 200 || !bytes.Contains(body, []byte(`"status":"done"`)) {
		t.Fatalf("s3 = %d %s", code, body)
	}
}

// publishUnvalidated stores envelopes as they are, without Validate, as a producer
// writing straight to JetStream would.
func publishUnvalidated(t *testing.T, f *fixture, envs ...*streams.Envelope) {
	t.Helper()
	for _, e := range envs {
		data, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		msg := nats.NewMsg(e.Subject())
		msg.Data = data
		msg.Header.Set(jetstream.MsgIDHeader, e.ID)
		if _, err := f.n.JS.PublishMsg(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
}

// [REDACTED] is longer than a short secret: a model at its bound that holds
// one is refused at the door, never accepted and then dead-lettered.
func TestRedactionNeverPushesAFieldPastItsBound(t *testing.T) {
	f := newFixture(t)
	alice := f.token("acme", "alice")
	model := strings.Repeat("x", streams.MaxNameLen-len(" password=abc1")) + " password=abc1"
	_, body := f.do("POST", "/v1/ingest", alice, envelopes(t, spinetest.Start("s1"), spinetest.End("s1", "done", model, "high")))
	resp := decode[struct {
		Results []struct {
			Status int
			Error  *struct{ Code, Message string }
		}
	}](t, body)
	if len(resp.Results) != 2 || resp.Results[1].Status != 400 || resp.Results[1].Error.Code != streams.ReasonFieldTooLong {
		t.Fatalf("ingest of a model that redaction lengthens = %s", body)
	}
	f.waitCaughtUp()
	var n int
	if err := f.n.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d dead letters (%v), want none", n, err)
	}
}
