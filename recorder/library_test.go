package recorder_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// A Library failure never fails the session: the store refuses every write
// (a real PostgreSQL constraint), and the session still records its steps,
// marks the content missing, and ends normally.
func TestLibraryFailureNeverFailsTheSession(t *testing.T) {
	h := running(t)
	if _, err := h.Pool.Exec(ctx, `ALTER TABLE library_pieces ADD CONSTRAINT refuse_all CHECK (false) NOT VALID`); err != nil {
		t.Fatal(err)
	}
	h.Publish(spinetest.Start("s1"), spinetest.Text("s1", 1, "writing"),
		spinetest.Write("s1", 2, "a.go", "package a\n"), spinetest.Command("s1", 3, "go build"),
		spinetest.End("s1", "done", "gpt-5-codex", "medium"))
	h.WaitCaughtUp()

	s := session(t, h, "s1")
	if s.Status != "done" || s.RecordedSteps != 2 || s.TranscriptFileID == "" {
		t.Fatalf("session = %+v", s)
	}
	page := steps(t, h, "s1")
	w := decodeMap(t, page.Steps[0].Detail)
	if w["contentMissing"] != true || w["contentDigest"] != library.Digest([]byte("package a\n")) {
		t.Fatalf("write step = %v", w)
	}
	if n := count(t, h, `SELECT count(*) FROM artifacts WHERE session_id = 's1' AND content_missing`); n != 2 {
		t.Fatalf("%d artifacts marked missing, want 2 (the write and the transcript)", n)
	}
	if n := count(t, h, `SELECT count(*) FROM library_files`); n != 0 {
		t.Fatalf("%d files stored by a failing store", n)
	}
	if n := count(t, h, `SELECT count(*) FROM dead_letters`); n != 0 {
		t.Fatal("a Library failure must not dead-letter the session's messages")
	}

	// Once the store works again, later sessions store their content.
	h.Pool.Exec(ctx, `ALTER TABLE library_pieces DROP CONSTRAINT refuse_all`)
	h.Publish(spinetest.Start("s2"), spinetest.Write("s2", 1, "b.go", "package b\n"))
	h.WaitCaughtUp()
	if n := count(t, h, `SELECT count(*) FROM library_files WHERE digest = $1`, library.Digest([]byte("package b\n"))); n != 1 {
		t.Fatal("store did not recover")
	}
}

func TestProducedByStampedAtEnd(t *testing.T) {
	h := running(t)
	size := int64(10)
	end := spinetest.End("s1", "failed", "", "")
	end.Artifacts = append(end.Artifacts, endArtifact("report.md", "# report\n"), endArtifact2("big.bin", "blake3:"+repeat("cd", 32), size))
	h.Publish(spinetest.Start("s1"), spinetest.Write("s1", 1, "x.txt", "x"))
	h.WaitCaughtUp()
	if n := count(t, h, `SELECT count(*) FROM artifacts WHERE session_id = 's1' AND produced_by IS NOT NULL`); n != 0 {
		t.Fatal("producedBy stamped before the session ended")
	}
	h.Publish(end)
	h.WaitCaughtUp()
	rows, err := h.Pool.Query(ctx, `SELECT kind, name, produced_by->>'app', produced_by->>'model', produced_by->>'effort',
		produced_by->>'sessionId' FROM artifacts WHERE session_id = 's1' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var kind, name, app, model, effort, sid string
		rows.Scan(&kind, &name, &app, &model, &effort, &sid)
		if app != "claude-code" || model != "" || effort != "" || sid != "s1" {
			t.Errorf("%s %s: producedBy app=%q model=%q effort=%q session=%q", kind, name, app, model, effort, sid)
		}
		n++
	}
	if n != 4 { // x.txt, report.md, big.bin, transcript
		t.Fatalf("%d artifacts, want 4", n)
	}
}

// A transcript longer than a piece streams into the Library page by page;
// with the store refusing writes it is marked missing and the session ends.
func TestLongTranscriptStreams(t *testing.T) {
	h := running(t)
	big := strings.Repeat("long prose line for a long session\n", 20000) // ~700 KB per chunk
	h.Publish(spinetest.Start("s1"), spinetest.Text("s1", 1, big), spinetest.Text("s1", 2, big),
		spinetest.End("s1", "done", "", ""))
	h.WaitCaughtUp()
	s := session(t, h, "s1")
	want, err := recorder.BuildTranscript(ctx, h.Pool, "s1")
	if err != nil || len(want) <= library.PieceSize || s.TranscriptFileID != library.Digest(want) {
		t.Fatalf("transcript %d bytes, id %s: %v", len(want), s.TranscriptFileID, err)
	}
	got, err := library.NewPGStore(nil).Get(ctx, h.Pool, s.TranscriptFileID)
	if err != nil || string(got) != string(want) {
		t.Fatalf("stored transcript: %d bytes, %v", len(got), err)
	}

	if _, err := h.Pool.Exec(ctx, `ALTER TABLE library_staging ADD CONSTRAINT refuse_all CHECK (false) NOT VALID`); err != nil {
		t.Fatal(err)
	}
	h.Publish(spinetest.Start("s2"), spinetest.Text("s2", 1, big), spinetest.Text("s2", 2, big+"x"),
		spinetest.End("s2", "done", "", ""))
	h.WaitCaughtUp()
	s2 := session(t, h, "s2")
	want2, _ := recorder.BuildTranscript(ctx, h.Pool, "s2")
	if s2.Status != "done" || s2.TranscriptFileID != library.Digest(want2) {
		t.Fatalf("session = %+v", s2)
	}
	if n := count(t, h, `SELECT count(*) FROM artifacts WHERE session_id = 's2' AND kind = 'transcript' AND content_missing`); n != 1 {
		t.Fatal("the unstored transcript is not marked missing")
	}
}

// A session that starts and ends in one batch has its transcript built from
// memory; it must be byte for byte the one built from the table.
func TestTranscriptSameFromMemoryAndTable(t *testing.T) {
	h := running(t)
	chunks := func(id string) []*streams.Envelope {
		var out []*streams.Envelope
		for seq := int64(1); seq <= 5; seq++ {
			c := spinetest.Text(id, seq, "line with nanoseconds\n")
			c.At = spinetest.T0.Add(time.Duration(seq)*time.Second + 123456789)
			out = append(out, c)
		}
		return append(out, spinetest.End(id, "done", "", ""))
	}
	// B: its start is committed before its chunks arrive (the table path).
	h.Publish(spinetest.Start("b"))
	h.WaitCaughtUp()
	h.Publish(chunks("b")...)
	h.WaitCaughtUp()
	// A: all in one publish burst, applied in one batch (the memory path).
	h.Publish(append([]*streams.Envelope{spinetest.Start("a")}, chunks("a")...)...)
	h.WaitCaughtUp()
	a, b := session(t, h, "a"), session(t, h, "b")
	if a.TranscriptFileID == "" || a.TranscriptFileID != b.TranscriptFileID {
		t.Fatalf("transcripts differ: memory %s, table %s", a.TranscriptFileID, b.TranscriptFileID)
	}
}

// Sessions that started in an earlier batch and end together have their
// transcripts read in one query, except one too long for a piece or of too
// many chunks, which streams; each must be byte for byte the table's.
func TestTranscriptsOfEarlierSessionsEndingTogether(t *testing.T) {
	defer func(n int) { *recorder.MaxLoadedChunks = n }(*recorder.MaxLoadedChunks)
	*recorder.MaxLoadedChunks = 3
	h := running(t)
	ids := []string{"empty", "short", "long", "many"}
	for _, id := range ids {
		h.Publish(spinetest.Start(id))
	}
	h.WaitCaughtUp()
	big := strings.Repeat("long prose line for a long session\n", 20000)
	h.Publish(spinetest.Text("short", 1, "one line\n"), spinetest.Text("short", 2, "two <lines> & more\n"),
		spinetest.Text("long", 1, big), spinetest.Text("long", 2, big))
	for seq := int64(1); seq <= 5; seq++ { // more chunks than are loaded at once
		h.Publish(spinetest.Text("many", seq, "a short line\n"))
	}
	h.WaitCaughtUp()
	var ends []*streams.Envelope
	for _, id := range ids {
		ends = append(ends, spinetest.End(id, "done", "", ""))
	}
	h.Publish(ends...)
	h.WaitCaughtUp()
	for _, id := range ids {
		s := session(t, h, id)
		want, err := recorder.BuildTranscript(ctx, h.Pool, id)
		if err != nil || s.TranscriptFileID != library.Digest(want) {
			t.Fatalf("%s: transcript id %s, want digest of %d bytes (%v)", id, s.TranscriptFileID, len(want), err)
		}
		got, err := library.NewPGStore(nil).Get(ctx, h.Pool, s.TranscriptFileID)
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s: stored transcript %d bytes, want %d: %v", id, len(got), len(want), err)
		}
	}
	if n := count(t, h, `SELECT count(*) FROM artifacts WHERE kind = 'transcript' AND produced_by->>'sessionId' = session_id`); n != 4 {
		t.Fatalf("%d stamped transcript artifacts, want 4", n)
	}
}

// A transient Library failure (here two serialization failures, 40001) is
// retried with the batch, not taken for a refusal: the content is stored,
// never marked missing for good.
func TestTransientLibraryFailureIsRetried(t *testing.T) {
	h := running(t)
	if _, err := h.Pool.Exec(ctx, `CREATE SEQUENCE piece_tries;
		CREATE FUNCTION conflict_twice() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF nextval('piece_tries') <= 2 THEN
			RAISE EXCEPTION 'could not serialize' USING ERRCODE = '40001'; END IF; RETURN NULL; END $$;
		CREATE TRIGGER conflict_twice BEFORE INSERT ON library_pieces
		FOR EACH STATEMENT EXECUTE FUNCTION conflict_twice()`); err != nil {
		t.Fatal(err)
	}
	h.Publish(spinetest.Start("s1"), spinetest.Write("s1", 1, "a.go", "package a\n"),
		spinetest.End("s1", "done", "gpt-5-codex", "medium"))
	h.WaitCaughtUp()
	if w := decodeMap(t, steps(t, h, "s1").Steps[0].Detail); w["contentMissing"] != nil {
		t.Fatalf("write step after a transient failure = %v", w)
	}
	if n := count(t, h, `SELECT count(*) FROM artifacts WHERE session_id = 's1' AND content_missing`); n != 0 {
		t.Fatalf("%d artifacts marked missing after a transient failure", n)
	}
	if n := count(t, h, `SELECT count(*) FROM library_files WHERE digest = $1`, library.Digest([]byte("package a\n"))); n != 1 {
		t.Fatal("the file was not stored once the failure passed")
	}
}

// Envelopes are counted once their transaction commits: two attempts
// rolled back by a serialization failure (40001) count nothing.
func TestEnvelopesAreCountedOnCommit(t *testing.T) {
	h := spinetest.New(t)
	reg := prometheus.NewRegistry()
	if _, err := h.Pool.Exec(ctx, `CREATE SEQUENCE session_tries;
		CREATE FUNCTION conflict_twice() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF nextval('session_tries') <= 2 THEN
			RAISE EXCEPTION 'could not serialize' USING ERRCODE = '40001'; END IF; RETURN NULL; END $$;
		CREATE TRIGGER conflict_twice BEFORE INSERT ON sessions
		FOR EACH STATEMENT EXECUTE FUNCTION conflict_twice()`); err != nil {
		t.Fatal(err)
	}
	h.StartRecorder(&spinetest.RecorderOpts{Config: recorder.Config{Registerer: reg}})
	h.Publish(spinetest.Start("s1"), spinetest.Text("s1", 1, "writing"), spinetest.End("s1", "done", "gpt-5-codex", "medium"))
	h.WaitCaughtUp()
	if n := count(t, h, `SELECT nextval('session_tries')`); n < 3 {
		t.Fatalf("the trigger ran %d times: the failures were not injected", n-1)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, mf := range mfs {
		if mf.GetName() == "spine_recorder_envelopes_total" {
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	if total != 3 {
		t.Errorf("spine_recorder_envelopes_total = %v for 3 envelopes", total)
	}
}

// A session without prose stores an empty transcript: a file of 0 bytes in
// the Library, its artifact beside the session's others. (Its start, step
// and end usually share a batch, the transcript then rendered from the
// batch; when they do not, from the chunks the recorder kept: both are
// in memory.)
func TestTranscriptWithoutProse(t *testing.T) {
	h := running(t)
	h.Publish(spinetest.Start("s1"), spinetest.Command("s1", 1, "go build"),
		spinetest.End("s1", "done", "gpt-5-codex", "medium"))
	h.WaitCaughtUp()
	s := session(t, h, "s1")
	if s.Status != "done" || s.TranscriptFileID != library.Digest(nil) {
		t.Fatalf("session = %+v, want done with the empty file %s as its transcript", s, library.Digest(nil))
	}
	if n := count(t, h, `SELECT count(*) FROM library_files WHERE digest = $1 AND size = 0`, library.Digest(nil)); n != 1 {
		t.Fatalf("%d empty files stored, want 1", n)
	}
	if n := count(t, h, `SELECT count(*) FROM artifacts WHERE session_id = 's1' AND kind = 'transcript' AND NOT content_missing`); n != 1 {
		t.Fatalf("%d stored transcript artifacts, want 1", n)
	}
}
