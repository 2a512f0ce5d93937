package recorder_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/secrets"
	"github.com/spinehq/spine/streams"
)

func TestSessionLifecycle(t *testing.T) {
	h := running(t)
	h.Publish(spinetest.Start("s1"), spinetest.Text("s1", 1, "hello "), spinetest.Command("s1", 2, "go test ./..."),
		spinetest.Stderr("s1", 3, "warning\n"), spinetest.Text("s1", 4, "world\n"))
	h.WaitCaughtUp()

	s := session(t, h, "s1")
	if s.Status != "running" || s.Ended() || s.RecordedSteps != 1 || s.DroppedActions != 0 || !s.Complete {
		t.Fatalf("live session = %+v", s)
	}
	if s.SessionRunID != recorder.RunID("s1") || s.App != "claude-code" || s.Kind != "run" || s.Level != "strong" {
		t.Fatalf("session identity = %+v", s)
	}
	live, err := recorder.ReadTranscript(ctx, h.Pool, alice, "s1", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Chunks) != 3 || live.Ended || live.Chunks[1].Stream != "stderr" || live.Next != 4 {
		t.Fatalf("live transcript = %+v", live)
	}

	h.Publish(spinetest.End("s1", "done", "claude-sonnet-4-5", ""))
	h.WaitCaughtUp()
	s = session(t, h, "s1")
	if s.Status != "done" || !s.Ended() || s.Model != "claude-sonnet-4-5" || s.Effort != "" {
		t.Fatalf("ended session = %+v", s)
	}
	ended, err := recorder.ReadTranscript(ctx, h.Pool, alice, "s1", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(ended.Chunks) != 3 || !ended.Ended || ended.TranscriptFileID != s.TranscriptFileID {
		t.Fatalf("ended transcript = %+v", ended)
	}
	data, err := library.NewPGStore(nil).Get(ctx, h.Pool, s.TranscriptFileID)
	if err != nil {
		t.Fatalf("transcript file: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], `"stream":"stderr"`) || !strings.Contains(lines[2], `"seq":4`) {
		t.Fatalf("transcript file = %s", data)
	}
	if library.Digest(data) != s.TranscriptFileID {
		t.Fatal("transcriptFileId is not the digest of the transcript")
	}
}

func TestClosedAppSetAndLevels(t *testing.T) {
	h := running(t)
	bad := spinetest.Start("cursor1")
	bad.App = "cursor"
	emb := spinetest.Start("emb1")
	emb.Level = "embeddings"
	attach := spinetest.Start("att1")
	attach.Kind = "attach"
	okAttach := spinetest.Start("att2")
	okAttach.Kind, okAttach.AppSessionRef = "attach", "claude-session-123"
	codex := spinetest.Start("cx1")
	codex.App, codex.Kind, codex.Level = "codex", "open", ""
	for _, e := range []*streams.Envelope{bad, emb, attach} {
		raw, _ := e.Marshal()
		h.PublishRaw(e.Subject(), raw, nil) // the publisher would refuse them first
	}
	h.Publish(okAttach, codex)
	h.WaitCaughtUp()

	dl := deadLetters(t, h)
	want := []string{streams.ReasonUnknownApp, streams.ReasonEmbeddingsLevel, streams.ReasonMissingField}
	if len(dl) != len(want) {
		t.Fatalf("dead letters = %+v", dl)
	}
	for i, w := range want {
		if dl[i].Reason != w {
			t.Errorf("dead letter %d reason = %s, want %s", i, dl[i].Reason, w)
		}
	}
	if s := session(t, h, "att2"); s.Kind != "attach" || s.AppSessionRef != "claude-session-123" {
		t.Fatalf("attach session = %+v", s)
	}
	if s := session(t, h, "cx1"); s.App != "codex" || s.Kind != "open" || s.Level != "" {
		t.Fatalf("codex session = %+v", s)
	}
	if n := count(t, h, `SELECT count(*) FROM sessions`); n != 2 {
		t.Fatalf("%d sessions, want 2", n)
	}
}

// A repeat of a seq recorded is dropped silently; a chunk whose seq fell
// in a hole (it came after chunks past it) is dropped too, but
// dead-lettered out_of_order to the session's owner: its 202 must end in
// something they can see. Neither is counted on the row.
func TestSequenceDuplicatesOutOfOrderAndHoles(t *testing.T) {
	h := running(t)
	dup := spinetest.Text("s1", 2, "second copy")
	dup.ID = "s1-c2-retry-with-new-id" // a different id: JetStream stores it, the recorder must drop it
	older := spinetest.Text("s1", 1, "first copy, retried late")
	older.ID = "s1-c1-retry"
	h.Publish(spinetest.Start("s1"), spinetest.Text("s1", 1, "a"), spinetest.Command("s1", 2, "ls"),
		dup, spinetest.Text("s1", 6, "f"), older, spinetest.Command("s1", 7, "pwd"),
		spinetest.Start("s2"), spinetest.Text("s2", 2, "b"), spinetest.Text("s2", 1, "a, racing b"))
	h.WaitCaughtUp()
	h.Publish(spinetest.Text("s1", 4, "late")) // a batch of its own: the hole is read from the database
	h.WaitCaughtUp()

	s := session(t, h, "s1")
	if s.DroppedActions != 3 || s.Complete || s.RecordedSteps != 2 || s.LastSeq != 7 {
		t.Fatalf("session = %+v (want 3 dropped for the hole 3..5, 2 steps, last seq 7)", s)
	}
	if n := count(t, h, `SELECT count(*) FROM session_chunks WHERE session_id = 's1'`); n != 2 {
		t.Fatalf("%d prose chunks stored, want 2 (the duplicate and the late chunk are dropped)", n)
	}
	page := steps(t, h, "s1")
	if len(page.Notes) != 1 {
		t.Fatalf("notes = %+v", page.Notes)
	}
	note := decodeMap(t, page.Notes[0].Body)
	if note["note"] != "hole" || note["from"] != 3.0 || note["to"] != 5.0 || note["missing"] != 3.0 {
		t.Fatalf("hole note = %v", note)
	}
	dl := deadLetters(t, h)
	if len(dl) != 2 || dl[0].Reason != streams.ReasonOutOfOrder || !strings.Contains(dl[0].Data, `"a, racing b"`) ||
		dl[1].Reason != streams.ReasonOutOfOrder || !strings.Contains(dl[1].Data, `"late"`) {
		t.Fatalf("dead letters = %+v, want s2's chunk 1 and s1's chunk 4, out_of_order (duplicates are silent)", dl)
	}
	if owner := count(t, h, `SELECT count(*) FROM dead_letters WHERE org = 'acme' AND member = 'alice'`); owner != 2 {
		t.Fatal("the out_of_order dead letter is not the session owner's")
	}
	tr, _ := recorder.ReadTranscript(ctx, h.Pool, alice, "s1", 0, 10)
	if tr.Complete {
		t.Fatal("a transcript with holes must say it is incomplete")
	}
}

func TestEventsBecomeStepsWithObservations(t *testing.T) {
	h := running(t)
	status := 200
	code := 2
	h.Publish(spinetest.Start("s1"),
		spinetest.Event("s1", 1, &streams.Event{Action: "command", Command: "make", ExitCode: &code, Output: "boom"}),
		spinetest.Write("s1", 2, "main.go", "package main\n"),
		spinetest.Event("s1", 3, &streams.Event{Action: "file_read", Path: "go.mod", Content: "module x\n"}),
		spinetest.Event("s1", 4, &streams.Event{Action: "fetch", URL: "https://example.test/doc", Status: &status}),
		spinetest.Event("s1", 5, &streams.Event{Action: "mcp_call", Server: "memql", Tool: "search", CallID: "c1",
			Arguments: json.RawMessage(`{"q":"spine"}`), IsError: true, Output: "rate limited"}),
		spinetest.Text("s1", 6, "done"))
	h.WaitCaughtUp()

	s := session(t, h, "s1")
	if s.RecordedSteps != 5 {
		t.Fatalf("recordedSteps = %d, want 5", s.RecordedSteps)
	}
	page := steps(t, h, "s1")
	wantActions := []string{"command", "file_write", "file_read", "fetch", "mcp_call"}
	for i, st := range page.Steps {
		if st.Action != wantActions[i] || st.Idx != i+1 || len(st.Observations) != 1 || *st.SessionSeq != int64(i+1) {
			t.Fatalf("step %d = %+v", i, st)
		}
	}
	cmd := decodeMap(t, page.Steps[0].Observations[0].Body)
	if cmd["exitCode"] != 2.0 || cmd["output"] != "boom" {
		t.Fatalf("command observation = %v", cmd)
	}
	mcp, mcpResult := decodeMap(t, page.Steps[4].Detail), decodeMap(t, page.Steps[4].Observations[0].Body)
	if args, _ := mcp["arguments"].(map[string]any); args["q"] != "spine" || mcpResult["isError"] != true ||
		mcpResult["output"] != "rate limited" {
		t.Fatalf("mcp_call detail = %v, observation = %v", mcp, mcpResult)
	}
	write := decodeMap(t, page.Steps[1].Detail)
	if write["contentDigest"] != library.Digest([]byte("package main\n")) || write["size"] != 13.0 {
		t.Fatalf("file_write detail = %v", write)
	}
	got, err := library.NewPGStore(nil).Get(ctx, h.Pool, write["contentDigest"].(string))
	if err != nil || string(got) != "package main\n" {
		t.Fatalf("written content = %q, %v", got, err)
	}
}

func TestIdenticalWritesAreOneFile(t *testing.T) {
	h := running(t)
	body := strings.Repeat("same bytes ", 100)
	h.Publish(spinetest.Start("s1"), spinetest.Write("s1", 1, "a.txt", body), spinetest.Write("s1", 2, "b.txt", body),
		spinetest.Start("s2"), spinetest.Write("s2", 1, "c.txt", body))
	h.WaitCaughtUp()
	d := library.Digest([]byte(body))
	if n := count(t, h, `SELECT count(*) FROM library_files WHERE digest = $1`, d); n != 1 {
		t.Fatalf("%d blobs for one content, want 1", n)
	}
	if n := count(t, h, `SELECT count(*) FROM steps WHERE detail->>'contentDigest' = $1`, d); n != 3 {
		t.Fatalf("%d steps reference it, want 3", n)
	}
	var enc string
	if err := h.Pool.QueryRow(ctx, `SELECT encoding FROM library_pieces WHERE digest = $1`, d).Scan(&enc); err != nil || enc != "zstd" {
		t.Fatalf("encoding = %q, %v (repetitive content compresses)", enc, err)
	}
}

func TestContentAboveCapIsReferencedByDigest(t *testing.T) {
	h := spinetest.New(t)
	h.StartRecorder(&spinetest.RecorderOpts{Config: recorder.Config{FileCap: 100}})
	big := strings.Repeat("x", 101)
	size := int64(5000)
	pushed := "blake3:" + strings.Repeat("ab", 32)
	h.Publish(spinetest.Start("s1"), spinetest.Write("s1", 1, "big.bin", big),
		spinetest.Event("s1", 2, &streams.Event{Action: "file_write", Path: "pushed.bin", ContentDigest: pushed, Size: &size}))
	h.WaitCaughtUp()
	page := steps(t, h, "s1")
	d := decodeMap(t, page.Steps[0].Detail)
	if d["contentOmitted"] != true || d["contentDigest"] != library.Digest([]byte(big)) || d["size"] != 101.0 {
		t.Fatalf("over-cap detail = %v", d)
	}
	if n := count(t, h, `SELECT count(*) FROM library_files WHERE digest = $1`, library.Digest([]byte(big))); n != 0 {
		t.Fatal("content above the cap must not be stored")
	}
	p := decodeMap(t, page.Steps[1].Detail)
	if p["contentDigest"] != pushed || p["size"] != 5000.0 || p["contentPushed"] != true {
		t.Fatalf("pushed-digest detail = %v", p)
	}
}

func TestMCPCallsFromTheNodeAndProtocolTools(t *testing.T) {
	h := running(t)
	h.Publish(spinetest.Start("s1"),
		spinetest.MCP("s1", "c1", "search_capabilities"),
		spinetest.MCP("s1", "c2", "submit"),
		spinetest.MCP("s1", "c3", "next_task"),
		spinetest.Event("s1", 1, &streams.Event{Action: "mcp_call", Server: "memql", Tool: "search_capabilities", CallID: "c1"}),
		spinetest.Event("s1", 2, &streams.Event{Action: "mcp_call", Server: "memql", Tool: "submit", CallID: "c2"}),
		spinetest.Text("s1", 3, "ok"))
	h.WaitCaughtUp()
	s := session(t, h, "s1")
	if s.RecordedSteps != 1 || s.LastSeq != 3 || s.DroppedActions != 0 {
		t.Fatalf("session = %+v: want one step (c1), submit/next_task never recorded, no hole", s)
	}
	page := steps(t, h, "s1")
	st := page.Steps[0]
	if st.Source != "mcp" || st.CallID != "c1" || st.Action != "mcp_call" || len(st.Observations) != 1 {
		t.Fatalf("mcp step = %+v", st)
	}
	if n := count(t, h, `SELECT count(*) FROM steps WHERE detail->>'tool' IN ('submit','next_task')`); n != 0 {
		t.Fatalf("%d protocol calls recorded as work", n)
	}
	// The node's record in one batch, the session's event in a later one:
	// still one step, never the dead letter of a second steps_call row.
	h.Publish(spinetest.Start("s2"), spinetest.MCP("s2", "c9", "search_capabilities"))
	h.WaitCaughtUp()
	h.Publish(spinetest.Event("s2", 1, &streams.Event{Action: "mcp_call", Server: "memql", Tool: "search_capabilities", CallID: "c9"}))
	h.WaitCaughtUp()
	if s := session(t, h, "s2"); s.RecordedSteps != 1 || s.LastSeq != 1 {
		t.Fatalf("session = %+v: want the node's one step", s)
	}
	if dl := deadLetters(t, h); len(dl) != 0 {
		t.Fatalf("dead letters: %+v", dl)
	}
}

func TestWorkerDisconnectEndsLiveSessions(t *testing.T) {
	h := running(t)
	other := spinetest.Start("s3")
	other.WorkerID = "w2"
	h.Publish(spinetest.Start("s1"), spinetest.Start("s2"), other, spinetest.End("s2", "done", "m", "high"),
		spinetest.Disconnect("w1", "stream closed"))
	h.WaitCaughtUp()
	s1 := session(t, h, "s1")
	if s1.Status != "disconnected" || !s1.Ended() || !strings.HasPrefix(s1.Error, "worker_disconnected: worker w1") ||
		!strings.Contains(s1.Error, "stream closed") || s1.TranscriptFileID == "" {
		t.Fatalf("s1 = %+v", s1)
	}
	if s2 := session(t, h, "s2"); s2.Status != "done" || s2.Effort != "high" {
		t.Fatalf("s2 (already ended) = %+v", s2)
	}
	if s3 := session(t, h, "s3"); s3.Status != "running" {
		t.Fatalf("s3 (other worker) = %+v", s3)
	}
}

func TestCancelledAndControl(t *testing.T) {
	h := running(t)
	ctl := &streams.Envelope{V: 1, Type: streams.TypeSessionControl, ID: "s1-ctl", At: spinetest.T0,
		SessionID: "s1", Control: "renew_credential", Reason: "expiring; new Authorization: Bearer abcdefghijklmnopqrstuvwxyz"}
	h.Publish(spinetest.Start("s1"), ctl, spinetest.End("s1", "cancelled", "", ""))
	h.WaitCaughtUp()
	s := session(t, h, "s1")
	if s.Status != "cancelled" || s.Model != "" || s.Effort != "" {
		t.Fatalf("session = %+v", s)
	}
	page := steps(t, h, "s1")
	if len(page.Notes) != 1 || page.Notes[0].Kind != "control" {
		t.Fatalf("notes = %+v", page.Notes)
	}
	body := string(page.Notes[0].Body)
	if !strings.Contains(body, "renew_credential") || strings.Contains(body, "abcdefghijklmnop") {
		t.Fatalf("control observation = %s", body)
	}
}

func TestParentStepLinksToSessionRun(t *testing.T) {
	h := running(t)
	st := spinetest.Start("s1")
	st.ParentRunID, st.StepID, st.PlanID = "plan-run-7", "step-3", "plan-7"
	h.Publish(st)
	h.WaitCaughtUp()
	var child string
	err := h.Pool.QueryRow(ctx, `SELECT id FROM runs WHERE parent_run_id = 'plan-run-7' AND parent_step_id = 'step-3'`).Scan(&child)
	if err != nil || child != recorder.RunID("s1") {
		t.Fatalf("child run of the planner step = %q, %v", child, err)
	}
}

func TestSecretsAreRedactedBeforeStorage(t *testing.T) {
	h := running(t)
	secret := "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	h.Publish(spinetest.Start("s1"),
		spinetest.Text("s1", 1, "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payloadpayload.sigsigsigsig' x\n"),
		spinetest.Command("s1", 2, "ANTHROPIC_API_KEY="+secret+" claude -p hi"),
		spinetest.Write("s1", 3, ".env", "api_key = \"hunter22222\"\n"),
		spinetest.End("s1", "failed", "", ""))
	h.WaitCaughtUp()
	for _, table := range []string{"session_chunks", "steps", "observations", "sessions"} {
		n := count(t, h, `SELECT count(*) FROM `+table+` t WHERE t::text ~ '(sk-ant-api03|hunter2|payloadpayload)'`)
		if n != 0 {
			t.Errorf("%s holds a secret in %d rows", table, n)
		}
	}
	n := count(t, h, `SELECT count(*) FROM library_pieces WHERE encoding = 'raw' AND position('hunter2' in convert_from(data, 'UTF8')) > 0`)
	if n != 0 {
		t.Error("blobs hold a secret")
	}
	tr, _ := recorder.ReadTranscript(ctx, h.Pool, alice, "s1", 0, 10)
	if !strings.Contains(tr.Chunks[0].Text, secrets.Redacted) {
		t.Fatalf("transcript chunk = %q", tr.Chunks[0].Text)
	}
}

// The door says with which rules it redacted (streams.HeaderRedacted): a
// message redacted with the recorder's own rules is taken as it is, and
// one that says nothing, or names other rules (a producer that wrote to
// NATS itself, a rule set since changed), is redacted before storage.
func TestRedactedOnlyOnceWithTheSameRules(t *testing.T) {
	h := running(t)
	secret := "sk-ant-api03-BBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	h.Publish(spinetest.Start("s1"))
	for seq, header := range []nats.Header{nil, {streams.HeaderRedacted: {"v1:rules-of-another-build"}}} {
		raw, err := spinetest.Text("s1", int64(seq+1), "key "+secret+"\n").Marshal()
		if err != nil {
			t.Fatal(err)
		}
		h.PublishRaw(streams.SessionSubject("s1", streams.TypeSessionChunk), raw, header)
	}
	h.Publish(spinetest.Text("s1", 3, "clean text\n"))
	h.WaitCaughtUp()
	if n := count(t, h, `SELECT count(*) FROM session_chunks WHERE position('sk-ant-api03' in text) > 0`); n != 0 {
		t.Fatalf("%d chunks hold the secret", n)
	}
	if n := count(t, h, `SELECT count(*) FROM session_chunks WHERE session_id = 's1'`); n != 3 {
		t.Fatalf("%d chunks recorded, want 3", n)
	}
	st, err := h.JS.Stream(ctx, streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(ctx, streams.SessionSubject("s1", streams.TypeSessionChunk))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Header.Get(streams.HeaderRedacted); got != secrets.Fingerprint() || got == "" {
		t.Fatalf("the door stamped %q, the rules are %q", got, secrets.Fingerprint())
	}
}

func TestOwnerScopedReads(t *testing.T) {
	h := running(t)
	h.Publish(spinetest.Start("s1"))
	h.WaitCaughtUp()
	_, errOther := recorder.GetSession(ctx, h.Pool, streams.Owner{Org: "acme", Member: "bob"}, "s1")
	_, errMissing := recorder.GetSession(ctx, h.Pool, alice, "nope")
	if errOther != recorder.ErrNotFound || errMissing != recorder.ErrNotFound {
		t.Fatalf("other member: %v, missing: %v", errOther, errMissing)
	}
}

// U+0000 cannot be stored by PostgreSQL; it must not block the stream.
func TestNULNeverBlocksTheStream(t *testing.T) {
	h := running(t)
	code := 0
	end := spinetest.End("s1", "done", "m\x00odel", "")
	end.Usage = &streams.Usage{InputTokens: 1, Raw: []byte(`{"note":"a\u0000b","k\u0000":[1,"\u0000"]}`)}
	h.Publish(spinetest.Start("s1"), spinetest.Text("s1", 1, "nul \x00 here"),
		spinetest.Event("s1", 2, &streams.Event{Action: "command", Command: "cat bin\x00ary", ExitCode: &code, Output: "\x00\x00"}),
		spinetest.Write("s1", 3, "a\x00.txt", "x\x00y"), end, spinetest.Start("s2"))
	h.WaitCaughtUp()
	s := session(t, h, "s1")
	if s.Status != "done" || s.RecordedSteps != 2 || s.Model != "m\uFFFDodel" || !strings.Contains(string(s.Usage), `a\ufffdb`) && !strings.Contains(string(s.Usage), "a\uFFFDb") {
		t.Fatalf("session = %+v usage %s", s, s.Usage)
	}
	if session(t, h, "s2").Status != "running" {
		t.Fatal("the session after it was not recorded")
	}
}

// The widest hole a session can have (seqs are bounded by streams.MaxSeq)
// fits the row's int4 counter, so it never fails the batch.
func TestWidestHoleFitsDroppedActions(t *testing.T) {
	h := running(t)
	h.Publish(spinetest.Start("s1"), spinetest.Text("s1", 1, "a"), spinetest.Text("s1", streams.MaxSeq, "b"),
		spinetest.End("s1", "done", "", ""), spinetest.Start("s2"))
	h.WaitCaughtUp()
	s := session(t, h, "s1")
	if s.DroppedActions != streams.MaxSeq-2 || s.Complete || s.Status != "done" || s.LastSeq != streams.MaxSeq {
		t.Fatalf("session = %+v", s)
	}
	session(t, h, "s2") // the stream went on
}

// TestSplitKeyIsCaughtWhereChunksAreRead: a key cut across two chunks of
// one stream, each piece passing the door unrecognised, is redacted in both
// pieces by the transcript read, whether the cut is inside a page or at its
// edge. The limit this shows: the chunk rows keep each piece as it came.
func TestSplitKeyIsCaughtWhereChunksAreRead(t *testing.T) {
	h := running(t)
	key := "sk-ant-api03-Qm9uZXlNYWtlc1RoZVdvcmxkR29Sb3VuZA"
	head, tail := key[:14], key[14:]
	h.Publish(spinetest.Start("s1"),
		spinetest.Text("s1", 1, "export ANTHROPIC_KEY="+head),
		spinetest.Stderr("s1", 2, "warning: unrelated"),
		spinetest.Text("s1", 3, tail+"\necho done\n"))
	h.WaitCaughtUp()
	for _, c := range []struct {
		since int64
		limit int
	}{{0, 10}, {0, 1}, {1, 5}, {2, 5}} {
		tr, err := recorder.ReadTranscript(ctx, h.Pool, alice, "s1", c.since, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range tr.Chunks {
			if strings.Contains(ch.Text, head) || strings.Contains(ch.Text, tail) {
				t.Errorf("since %d limit %d: chunk %d serves a piece of the key: %q", c.since, c.limit, ch.Seq, ch.Text)
			}
			if ch.Seq == 3 && ch.Text != secrets.Redacted+"\necho done\n" {
				t.Errorf("since %d limit %d: chunk 3 = %q", c.since, c.limit, ch.Text)
			}
		}
	}
	if n := count(t, h, `SELECT count(*) FROM session_chunks WHERE position($1 in text) > 0`, tail); n != 1 {
		t.Errorf("the limit changed: %d chunk rows keep the unrecognised piece, want 1", n)
	}
}

// TestSplitTailAfterTheDoorsRedactionIsCaught cuts each shape mid-secret
// where the door recognises the first half: the first chunk is stored
// ending in [REDACTED], the second with the raw tail. Neither the
// transcript read nor the transcript file serves the tail.
func TestSplitTailAfterTheDoorsRedactionIsCaught(t *testing.T) {
	h := running(t)
	shapes := []string{
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEYabcd",
		"password=Tr0ub4dor3horsebatterystaple99",
		"echo sk-ant-api03-Qm9uZXlNYWtlc1RoZVdvcmxkR29Sb3VuZA",
		"token ghp_Qm9uZXlNYWtlc1RoZVdvcmxkR29Sb3VuZA12",
	}
	for i, c := range shapes {
		id := fmt.Sprintf("split%d", i)
		h.Publish(spinetest.Start(id), spinetest.Text(id, 1, c[:len(c)-12]),
			spinetest.Text(id, 2, c[len(c)-12:]+"\n"), spinetest.End(id, "done", "m", ""))
	}
	h.WaitCaughtUp()
	for i, c := range shapes {
		id, tail := fmt.Sprintf("split%d", i), c[len(c)-12:]
		tr, err := recorder.ReadTranscript(ctx, h.Pool, alice, id, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range tr.Chunks {
			if strings.Contains(ch.Text, tail) {
				t.Errorf("%q: transcript chunk %d = %q", c, ch.Seq, ch.Text)
			}
		}
		data, err := library.NewPGStore(nil).Get(ctx, h.Pool, session(t, h, id).TranscriptFileID)
		if err != nil || strings.Contains(string(data), tail) {
			t.Errorf("%q: transcript file %s (%v)", c, data, err)
		}
	}
}
