package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/fakemodel"
	"github.com/spinehq/spine/streams"
)

// spine run of a real Claude Code while spine collect follows the same
// ~/.claude: the app writes its transcript as spine run reads its
// stream-json, and both would record the session (same id, chunks
// numbered by two formats). The model holds its first response past the
// collector's --idle, so a collector recording the session would also end
// it under spine run. The collector reads the transcript (its offset
// moves) and leaves the session alone: one session, kind run, no
// workerId, its prose chunks exactly those of spine run's output alone,
// its router call the model's tokens, nothing dead-lettered.
func TestCollectLeavesSpineRunAlone(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	hold := fakemodel.NewHold()
	srv.Anthropic(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("run-and-collect-one"),
			fakemodel.Tool("Bash", map[string]any{"command": "echo hi", "description": "say"})},
			Match: fakemodel.MainThread, Hold: hold, Usage: fakemodel.Usage{Input: 10, Output: 30, CacheRead: 4000, CacheWrite5m: 300}},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("run-and-collect-two")},
			Match: fakemodel.MainThread, Usage: fakemodel.Usage{Input: 4, Output: 12, CacheRead: 4300, CacheWrite5m: 60}},
	)
	state := filepath.Join(t.TempDir(), "state.json")
	col := startCollectorArgs(t, "--claude-dir", filepath.Join(c.Home, ".claude"), "--codex-dir", "", "--state", state,
		"--machine", "laptop-1", "--idle", "300ms")
	output := filepath.Join(t.TempDir(), "claude.jsonl")
	bin := appWrapper(t, c.Bin, c.Dir, c.Env(), output)
	ran := make(chan error, 1)
	go func() {
		out, err := capture(t, "run", "--quiet", "--bin", bin, "--", "work", "--allowedTools", "Bash")
		if err != nil {
			t.Logf("spine run: %s", out)
		}
		ran <- err
	}()
	// The model holds its first response: the transcript has the prompt,
	// spine run's output no chunk yet. The collector reads the transcript.
	<-hold.Reached()
	eventually(t, "the collector reading the transcript", func() bool {
		ts := c.Transcripts()
		return len(ts) > 0 && stateOffset(t, state, ts[0]) > 0
	})
	// Quiet past the collector's --idle and a poll: a collector recording
	// the session itself would end it now, under spine run.
	eventually(t, "the transcript quiet past --idle", func() bool {
		fi, err := os.Stat(c.Transcripts()[0])
		return err == nil && time.Since(fi.ModTime()) > 300*time.Millisecond+2*time.Second+500*time.Millisecond
	})
	hold.Release()
	if err := <-ran; err != nil {
		t.Fatalf("spine run: %v", err)
	}
	eventually(t, "the collector reading the whole transcript", func() bool {
		fi, err := os.Stat(c.Transcripts()[0])
		return err == nil && stateOffset(t, state, c.Transcripts()[0]) == fi.Size()
	})
	col.stop(t)
	caughtUp()

	raw, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	appID, _ := firstValue(raw, "session_id").(string)
	id := apps.SessionID("claude-code", appID)
	rows, err := n.Pool.Query(context.Background(), `SELECT id, kind, worker_id FROM sessions WHERE app_session_ref = $1`, appID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var sid, kind, worker string
		if err := rows.Scan(&sid, &kind, &worker); err != nil {
			t.Fatal(err)
		}
		got = append(got, sid+" "+kind+" "+worker)
	}
	if rows.Err() != nil || !slices.Equal(got, []string{id + " run "}) {
		t.Fatalf("sessions of app session %s: %q (%v), want %s alone, kind run, no worker", appID, got, rows.Err(), id)
	}
	want := runChunks(t, raw)
	stored := storedChunks(t, n.Pool, id)
	if len(want) == 0 || !slices.Equal(stored, want) {
		t.Fatalf("the session's chunks:\n%q\nspine run's output alone makes:\n%q", stored, want)
	}
	u := servedUsage(srv.Log())
	if row := routerCall(t, n, id); row.tokens != *accounting.Normalise(&u) || row.status != "done" {
		t.Fatalf("router call %+v %s, the model served %+v", row.tokens, row.status, *accounting.Normalise(&u))
	}
	var dead int
	if err := n.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters`).Scan(&dead); err != nil || dead != 0 {
		t.Fatalf("%d dead letters (%v)", dead, err)
	}
}

// stateOffset is how far the collector's state says it sent file.
func stateOffset(t *testing.T, state, file string) int64 {
	t.Helper()
	data, err := os.ReadFile(state)
	var st struct {
		Files map[string]struct {
			Offset int64 `json:"offset"`
		} `json:"files"`
	}
	if err != nil || json.Unmarshal(data, &st) != nil {
		return 0
	}
	return st.Files[file].Offset
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// storedChunks are a session's prose chunks (seq, text) as stored.
func storedChunks(t *testing.T, pool *pgxpool.Pool, id string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT seq, text FROM session_chunks WHERE session_id = $1 ORDER BY seq`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var seq int64
		var text string
		if err := rows.Scan(&seq, &text); err != nil {
			t.Fatal(err)
		}
		out = append(out, itoa(seq)+" "+text)
	}
	return out
}

// runChunks are the prose chunks (seq, text) the translation of a
// stream-json output alone makes.
func runChunks(t *testing.T, raw []byte) []string {
	t.Helper()
	sink := &chunkSink{}
	tr := apps.NewTranslator(apps.Options{Owner: streams.Owner{Org: "dev", Member: "dev"}, Sink: sink, NewOutput: true})
	st := tr.Stream(apps.Source{Path: "out", ModTime: time.Now(), Format: apps.FormatClaudeStream})
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if _, err := st.Record(context.Background(), apps.Record{N: i + 1, Data: []byte(line)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Done(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tr.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sink.chunks
}

type chunkSink struct{ chunks []string }

func (*chunkSink) Recorded(context.Context, string) (apps.Recorded, error) {
	return apps.Recorded{}, nil
}
func (s *chunkSink) Publish(_ context.Context, e *streams.Envelope) error {
	if e.Type == streams.TypeSessionChunk && e.Event == nil {
		s.chunks = append(s.chunks, itoa(e.Seq)+" "+e.Text)
	}
	return nil
}

// spine run marks itself running (collect.MarkRun) before it starts the
// app, held for the app's life, so a collector here waits for its claims;
// the mark is gone once the run is. The app itself finds one marker, locked.
func TestRunMarksItselfRunning(t *testing.T) {
	_, _ = testNode(t)
	claims := claimsDir()
	seen := filepath.Join(t.TempDir(), "seen")
	body := `for m in "` + claims + `"/*.run; do if [ -e "$m" ]; then flock -n "$m" true && echo unlocked || echo held; fi; done > "` + seen + `"; cat ` + fastFixture
	c, err := newClient("", "")
	if err != nil {
		t.Fatal(err)
	}
	argv, format, _ := appArgs("claude-code", []string{"hi"})
	if _, err := runApp(context.Background(), runSpec{Bin: script(t, body), Argv: argv, Format: format, API: c}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(seen); err != nil || string(b) != "held\n" {
		t.Fatalf("the app found %q (%v), want one marker, held", b, err)
	}
	if m, _ := filepath.Glob(filepath.Join(claims, "*.run*")); len(m) != 0 {
		t.Fatalf("markers left after the run: %v", m)
	}
}
