package recorder_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// Every kind of bad input gets a dead letter with its reason, and the good
// messages around it are all recorded.
func TestDeadLettersLoseNothingElse(t *testing.T) {
	h := running(t)
	subj := streams.SessionSubject("s1", streams.TypeSessionChunk)
	h.Publish(spinetest.Start("s1"), spinetest.Text("s1", 1, "one"))
	h.PublishRaw(subj, []byte(`{"v":1,"type":"session.chunk",`), nil)
	h.Publish(spinetest.Text("s1", 2, "two"))
	h.PublishRaw(streams.SessionSubject("s1", "frobnicate"), []byte(`{"v":1,"type":"session.frobnicate","id":"x1","at":"2026-11-01T09:00:00Z","sessionId":"s1"}`), nil)
	h.PublishRaw(subj, []byte(`{"v":1,"type":"session.chunk","id":"x2","at":"2026-11-01T09:00:00Z","sessionId":"s1","seq":"three","stream":"stdout"}`), nil)
	big := spinetest.Text("s1", 3, strings.Repeat("y", streams.MaxChunkText+1))
	raw, _ := big.Marshal()
	h.PublishRaw(subj, raw, nil)
	h.Publish(spinetest.Text("s1", 3, "three"))
	end := spinetest.End("s9", "done", "", "")
	h.Publish(end) // end before start
	h.PublishRaw(subj, []byte("{\"v\":1,\"type\":\"session.chunk\",\"id\":\"x3\",\"text\":\"\xff\xfe\"}"), nil)
	h.PublishRaw(streams.SessionSubject("s2", streams.TypeSessionChunk), mustMarshal(t, spinetest.Text("s1", 4, "wrong subject")), nil)
	wrongOwner := spinetest.Text("s1", 4, "from bob")
	h.PublishRaw(subj, mustMarshal(t, wrongOwner), nats.Header{streams.HeaderOrg: {"acme"}, streams.HeaderMember: {"bob"}})
	h.Publish(spinetest.Text("s1", 5, "five"), spinetest.End("s1", "done", "", ""))
	h.Publish(spinetest.Text("s1", 6, "after end"))
	h.WaitCaughtUp()

	want := []string{streams.ReasonMalformed, streams.ReasonUnknownType, streams.ReasonWrongType, streams.ReasonFieldTooLong,
		streams.ReasonUnknownSession, streams.ReasonInvalidUTF8, streams.ReasonSubject, streams.ReasonOwnerMismatch,
		streams.ReasonSessionEnded}
	dl := deadLetters(t, h)
	if len(dl) != len(want) {
		t.Fatalf("%d dead letters, want %d: %+v", len(dl), len(want), dl)
	}
	for i, w := range want {
		if dl[i].Reason != w || dl[i].Detail == "" {
			t.Errorf("dead letter %d = %s (%s), want %s", i, dl[i].Reason, dl[i].Detail, w)
		}
	}
	s := session(t, h, "s1")
	if s.Status != "done" || s.LastSeq != 5 || s.DroppedActions != 1 {
		t.Fatalf("session = %+v (want seq 4 missing: its only copies were refused)", s)
	}
	if n := count(t, h, `SELECT count(*) FROM session_chunks WHERE session_id = 's1'`); n != 4 {
		t.Fatalf("%d chunks recorded, want 4 (one, two, three, five)", n)
	}
	// The DLQ stream has them too, with the reason in a header.
	st, err := h.JS.Stream(ctx, streams.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := st.Info(ctx)
	if info.State.Msgs != uint64(len(want)) {
		t.Fatalf("DLQ stream holds %d, want %d", info.State.Msgs, len(want))
	}
	m, err := st.GetMsg(ctx, info.State.FirstSeq)
	if err != nil || m.Header.Get("Spine-Reason") != streams.ReasonMalformed {
		t.Fatalf("first DLQ message = %+v, %v", m, err)
	}
}

func TestDeadLettersAreRedacted(t *testing.T) {
	h := running(t)
	h.PublishRaw(streams.SessionSubject("s1", streams.TypeSessionChunk),
		[]byte(`{"v":1,"type":"session.chunk","credential":"Bearer abcdefghijklmnopqrstuvwxyz012345", "apiKey": "sk-proj-ABCDEFGHIJKLMNOPQRSTUV"`), nil)
	h.WaitCaughtUp()
	dl := deadLetters(t, h)
	if len(dl) != 1 || strings.Contains(dl[0].Data, "abcdefghijklmnop") || strings.Contains(dl[0].Data, "ABCDEFGHIJKLMNOP") {
		t.Fatalf("dead letter keeps a secret: %+v", dl)
	}
}

func mustMarshal(t *testing.T, e *streams.Envelope) []byte {
	t.Helper()
	b, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A dead letter is its sender's when a verified caller sent it, else the
// owner of the session it was for, else the owner it names itself: a
// trusted duplicate start is its own owner's, never the owner of the
// session it collided with.
func TestDeadLettersNameTheirOwner(t *testing.T) {
	h := running(t)
	bobs := spinetest.Start("s1")
	bobs.ID, bobs.Owner = "s1-start-bob", &streams.Owner{Org: "acme", Member: "bob"}
	h.Publish(spinetest.Start("s1"), spinetest.End("s1", "done", "", ""), bobs)
	h.Publish(spinetest.Text("s1", 1, "after the end"), spinetest.Text("ghost", 1, "no start"))
	h.PublishRaw(streams.SessionSubject("s1", streams.TypeSessionChunk), mustMarshal(t, spinetest.Text("s1", 2, "from eve")),
		nats.Header{streams.HeaderOrg: {"evil"}, streams.HeaderMember: {"eve"}})
	h.WaitCaughtUp()
	rows, err := h.Pool.Query(ctx, `SELECT reason, org || '/' || member FROM dead_letters ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var reason, owner string
		if err := rows.Scan(&reason, &owner); err != nil {
			t.Fatal(err)
		}
		got = append(got, reason+" "+owner)
	}
	want := []string{"duplicate_start acme/bob", "session_ended acme/alice", "unknown_session /", "owner_mismatch evil/eve"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("dead letters %q, want %q", got, want)
	}
}

// A trusted start for an id another owner claimed at the door, whose own
// start is not yet projected, is that sender's duplicate_start: the row and
// the claim never name two owners, and the holder's start is recorded.
func TestStartForAnIdClaimedByAnotherIsDuplicate(t *testing.T) {
	h := running(t)
	if _, err := recorder.ClaimSessions(ctx, h.Pool, map[string]streams.Owner{"c1": {Org: "acme", Member: "alice"}}, nil); err != nil {
		t.Fatal(err)
	}
	bobs := spinetest.Start("c1")
	bobs.ID, bobs.Owner = "c1-start-bob", &streams.Owner{Org: "acme", Member: "bob"}
	h.Publish(bobs)
	h.WaitCaughtUp()
	h.Publish(spinetest.Start("c1"))
	h.WaitCaughtUp()
	var owner, claim, reasons string
	if err := h.Pool.QueryRow(ctx, `SELECT (SELECT org || '/' || member FROM sessions WHERE id = 'c1'),
		(SELECT org || '/' || member FROM session_owners WHERE session_id = 'c1'),
		(SELECT string_agg(reason || ' ' || org || '/' || member, ', ') FROM dead_letters)`).Scan(&owner, &claim, &reasons); err != nil {
		t.Fatal(err)
	}
	if owner != "acme/alice" || claim != "acme/alice" || reasons != "duplicate_start acme/bob" {
		t.Fatalf("row owner %q, claim %q, dead letters %q", owner, claim, reasons)
	}
}
