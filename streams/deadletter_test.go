package streams_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/streams"
)

// refuseAll dead-letters every message; the one whose data is "for m2"
// names o1/m2 as its session's owner, as a handler that knows the session
// would.
type refuseAll struct{}

func (refuseAll) Apply(_ context.Context, _ pgx.Tx, msgs []streams.Message) ([]error, error) {
	out := make([]error, len(msgs))
	for i, m := range msgs {
		rej := streams.Reject(streams.ReasonUnknownSession, "refused")
		if string(m.Data) == "\xfffor m2" || string(m.Data) == `{"type":"t","id":"from-o1m1"}` {
			rej.Owner = streams.Owner{Org: "o1", Member: "m2"}
		}
		out[i] = rej
	}
	return out, nil
}

// Each dead letter is read by its owner only — the verified caller first,
// then the session's owner the handler named, then the owner the message
// names itself — an org admin's scope covers the org, and a dead letter
// whose bytes are not JSON is listed and read all the same.
func TestDeadLettersAreScopedToTheirOwner(t *testing.T) {
	pool, _ := pgtest.New(t)
	ctx := context.Background()
	js := startJetStream(t)
	msgs := []*nats.Msg{
		{Data: []byte(`{"type":"t","id":"from-o1m1"}`), Header: nats.Header{streams.HeaderOrg: {"o1"}, streams.HeaderMember: {"m1"}}},
		{Data: []byte("\xfffor m2")},
		{Data: []byte(`{"type":"plan.budget","id":"b1","org":"o1","member":"m3"}`)},
		{Data: []byte(`{"type":"session.start","id":"s-start","sessionId":"s","owner":{"org":"o2","member":"m1"}}`)},
		{Data: []byte(`{"type":"session.chunk","id":"nobody's"}`)},
	}
	for _, m := range msgs {
		m.Subject = "spine.session.x.chunk"
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan uint64, 16)
	p, err := streams.NewProjector(streams.ProjectorConfig{Name: "refuse", Stream: streams.StreamSessions,
		Handler: refuseAll{}, Pool: pool, JS: js, OnCommit: func(last uint64, _ []streams.Message) { done <- last }})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	for last := uint64(0); last < uint64(len(msgs)); last = <-done {
	}

	seqs := func(scope streams.DeadLetterScope, after streams.DeadLetterCursor, limit int) []uint64 {
		t.Helper()
		dls, err := streams.ListDeadLetters(ctx, pool, scope, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, d := range dls {
			out = append(out, d.Seq)
		}
		return out
	}
	member := func(org, m string) streams.DeadLetterScope {
		return streams.DeadLetterScope{Owner: streams.Owner{Org: org, Member: m}}
	}
	for name, c := range map[string]struct {
		scope streams.DeadLetterScope
		want  []uint64
	}{
		"caller's own, whatever the handler said": {member("o1", "m1"), []uint64{1}},
		"the session owner the handler named":     {member("o1", "m2"), []uint64{2}},
		"the owner the message names":             {member("o1", "m3"), []uint64{3}},
		"a start's owner":                         {member("o2", "m1"), []uint64{4}},
		"an org admin: the org's":                 {streams.DeadLetterScope{Owner: streams.Owner{Org: "o1", Member: "boss"}, WholeOrg: true}, []uint64{1, 2, 3}},
		"no owner is no one's":                    {streams.DeadLetterScope{WholeOrg: true}, nil},
	} {
		if got := seqs(c.scope, streams.DeadLetterCursor{}, 100); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
	admin := streams.DeadLetterScope{Owner: streams.Owner{Org: "o1"}, WholeOrg: true}
	if got := seqs(admin, streams.DeadLetterCursor{Stream: streams.StreamSessions, Seq: 1}, 1); !slices.Equal(got, []uint64{2}) {
		t.Errorf("page after seq 1 = %v, want [2]", got)
	}

	d, err := streams.GetDeadLetter(ctx, pool, member("o1", "m2"), streams.StreamSessions, 2)
	if err != nil || d.Type != "" || d.ID != "" || string(d.Message) != "\"\ufffdfor m2\"" {
		t.Fatalf("the non-JSON dead letter = %+v, %v", d, err)
	}
	d, err = streams.GetDeadLetter(ctx, pool, member("o2", "m1"), streams.StreamSessions, 4)
	if err != nil || d.Type != "session.start" || d.SessionID != "s" || d.ID != "s-start" {
		t.Fatalf("the start's dead letter = %+v, %v", d, err)
	}
	for _, seq := range []uint64{2, 99} {
		if _, err := streams.GetDeadLetter(ctx, pool, member("o1", "m1"), streams.StreamSessions, seq); !errors.Is(err, streams.ErrNotFound) {
			t.Errorf("another's or a missing dead letter (%d): %v, want ErrNotFound", seq, err)
		}
	}
}

func TestDeadLetterCursor(t *testing.T) {
	c, err := streams.ParseDeadLetterCursor("SPINE_SESSIONS:42")
	if err != nil || c.Stream != "SPINE_SESSIONS" || c.Seq != 42 || c.String() != "SPINE_SESSIONS:42" {
		t.Fatalf("cursor = %+v, %v", c, err)
	}
	for _, bad := range []string{"x", "S:", ":1", "S:-1", "a.b:1", "S:1:2"} {
		if _, err := streams.ParseDeadLetterCursor(bad); !errors.Is(err, streams.ErrBadCursor) {
			t.Errorf("%q: %v, want ErrBadCursor", bad, err)
		}
	}
}
