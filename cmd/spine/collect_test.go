package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
	"github.com/spinehq/spine/streams"
)

// collectFiles lays a Claude Code transcript and a Codex rollout out as
// the apps do under home (.claude/projects, .codex/sessions/Y/M/D), cut
// after the given share of their bytes, mid-line; the whole of each is
// returned by path, for the test to write more of later.
func collectFiles(t *testing.T, home string, cut float64) map[string][]byte {
	t.Helper()
	fx := sharedFixtures(t)
	files := map[string]string{
		filepath.Join(home, ".claude", "projects", "-w-crud", "8122657c-fe54-4dc9-89a3-20049e8a84f7.jsonl"):     filepath.Join(fx, "claude-transcripts", "tomjnsn-agentlogs__claudecode_crud.jsonl"),
		filepath.Join(home, ".codex", "sessions", "2025", "10", "12", "rollout-2025-10-12T21-00-00-crud.jsonl"): filepath.Join(fx, "codex-rollout", "tomjnsn-agentlogs__codex_crud.jsonl"),
	}
	whole := map[string][]byte{}
	for dst, src := range files {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data[:midLine(data, cut)], 0o644); err != nil {
			t.Fatal(err)
		}
		whole[dst] = data
	}
	return whole
}

// midLine is the length of data's first share, moved off a line's end so
// that a partial line is left waiting.
func midLine(data []byte, share float64) int {
	n := int(float64(len(data)) * share)
	if n > 0 && n < len(data) && data[n-1] == '\n' {
		n++
	}
	return n
}

// grow writes data from its current length up to the share given.
func grow(t *testing.T, path string, data []byte, share float64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := midLine(data, share); int64(n) > st.Size() {
		appendTo(t, path, data[st.Size():n])
	}
}

func appendTo(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

// stored is how many envelopes the session log holds, but the running
// usage ones (session.usage, which only a live translation sends): what a
// translation of the same files counts. Those it checks apart: no session
// holds the same running usage twice (nothing sent twice).
func stored(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	ctx := context.Background()
	s, err := n.JS.Stream(ctx, streams.StreamSessions)
	if err != nil {
		t.Fatal(err)
	}
	usage := streams.SessionSubject("*", streams.TypeSessionUsage)
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(usage))
	if err != nil {
		t.Fatal(err)
	}
	all := info.State.Msgs
	var usages uint64
	for _, c := range info.State.Subjects {
		all -= c
		usages += c
	}
	usageOnce(t, s, usage, usages)
	return all
}

// usageOnce fails the test when two of the log's n session.usage carry
// the same session and usage.
func usageOnce(t *testing.T, s jetstream.Stream, subject string, n uint64) {
	t.Helper()
	if n == 0 {
		return
	}
	ctx := context.Background()
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for got := uint64(0); got < n; {
		batch, err := c.Fetch(int(n-got), jetstream.FetchMaxWait(spinetest.WaitTimeout))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			got++
			e, err := streams.Decode(m.Data())
			if err != nil {
				t.Fatal(err)
			}
			key := fmt.Sprintf("%s %+v %v", e.SessionID, *e.Usage, e.TotalCost)
			if e.TotalCost != nil {
				key = fmt.Sprintf("%s %+v %g", e.SessionID, *e.Usage, *e.TotalCost)
			}
			if seen[key] {
				t.Fatalf("session.usage stored twice: %s", key)
			}
			seen[key] = true
		}
		if batch.Error() != nil {
			t.Fatal(batch.Error())
		}
	}
}

func importJSON(t *testing.T, args ...string) importer.Summary {
	t.Helper()
	out, err := capture(t, append([]string{"import", "--json"}, args...)...)
	var sum importer.Summary
	if err != nil || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	return sum
}

// Collects with the files growing between them, a partial last line
// waiting in each but the last: spine stores every envelope the translation makes
// except the ends (a collected session stays open), once; `spine import`
// of the same files afterwards adds only those ends.
func TestCollectOnceGoesOnWhereItStopped(t *testing.T) {
	n, caughtUp := testNode(t)
	home := t.TempDir()
	whole := collectFiles(t, home, 0.1)
	state := filepath.Join(t.TempDir(), "state.json")
	collectOnce := func() {
		t.Helper()
		if _, err := capture(t, "collect", "--once", "--claude-dir", filepath.Join(home, ".claude"),
			"--codex-dir", filepath.Join(home, ".codex"), "--state", state, "--machine", "laptop-1"); err != nil {
			t.Fatalf("collect: %v", err)
		}
		caughtUp()
	}
	collectOnce()
	first := stored(t, n)
	for i := 2; i <= 10; i++ {
		for path, data := range whole {
			grow(t, path, data, float64(i)/10)
		}
		collectOnce()
	}
	collectOnce() // nothing new: nothing sent

	dry := importJSON(t, "--dry-run", filepath.Join(home, ".claude"), filepath.Join(home, ".codex"))
	if dry.Sessions != 2 {
		t.Fatalf("dry run: %+v", dry)
	}
	if got, want := stored(t, n), uint64(dry.Envelopes-dry.Sessions); got != want || first == 0 || first >= got {
		t.Fatalf("collected %d envelopes (%d after the first tenth), want every one but the %d ends: %d", got, first, dry.Sessions, want)
	}
	var sess map[string]any
	out, err := capture(t, "read", "session", "8122657c-fe54-4dc9-89a3-20049e8a84f7", "--json")
	if err != nil || json.Unmarshal([]byte(out), &sess) != nil {
		t.Fatalf("read session: %v\n%s", err, out)
	}
	if sess["kind"] != "attach" || sess["appSessionRef"] != "8122657c-fe54-4dc9-89a3-20049e8a84f7" || sess["workerId"] != "laptop-1" {
		t.Fatalf("collected session: %v", sess)
	}

	imp := importJSON(t, filepath.Join(home, ".claude"), filepath.Join(home, ".codex"))
	caughtUp()
	if imp.Envelopes != dry.Sessions || stored(t, n) != uint64(dry.Envelopes) {
		t.Fatalf("import after collect published %d envelopes (want the %d ends); log holds %d of %d", imp.Envelopes,
			dry.Sessions, stored(t, n), dry.Envelopes)
	}
}

// A file cut shorter than its offset is read again from the start (its
// envelopes are the same ids: nothing new is stored), and a deleted file's
// offset is forgotten while spine keeps its session.
func TestCollectRewrittenAndDeletedFiles(t *testing.T) {
	n, caughtUp := testNode(t)
	home := t.TempDir()
	whole := collectFiles(t, home, 1)
	state := filepath.Join(t.TempDir(), "state.json")
	collectOnce := func() {
		t.Helper()
		if _, err := capture(t, "collect", "--once", "--claude-dir", filepath.Join(home, ".claude"),
			"--codex-dir", filepath.Join(home, ".codex"), "--state", state); err != nil {
			t.Fatalf("collect: %v", err)
		}
		caughtUp()
	}
	collectOnce()
	all := stored(t, n)
	var claude string
	for path := range whole {
		if filepath.Ext(path) == ".jsonl" && bytes.Contains([]byte(path), []byte(".claude")) {
			claude = path
		}
	}
	data, _ := os.ReadFile(claude)
	if err := os.WriteFile(claude, data[:len(data)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	collectOnce()
	if got := stored(t, n); got != all {
		t.Fatalf("a file cut short stored %d envelopes more", got-all)
	}
	if err := os.Remove(claude); err != nil {
		t.Fatal(err)
	}
	collectOnce()
	raw, err := os.ReadFile(state)
	if err != nil || bytes.Contains(raw, []byte(claude)) {
		t.Fatalf("state still has the deleted file (%v):\n%s", err, raw)
	}
	if _, err := capture(t, "read", "session", "8122657c-fe54-4dc9-89a3-20049e8a84f7"); err != nil {
		t.Fatalf("the deleted file's session: %v", err)
	}
}

// A token spine refuses stops `spine collect` with a message saying so:
// starting again would be refused the same way, forever.
func TestCollectStopsOnARefusedToken(t *testing.T) {
	testNode(t)
	home := t.TempDir()
	collectFiles(t, home, 0.5)
	ctx, cancel := context.WithTimeout(context.Background(), spinetest.WaitTimeout)
	defer cancel()
	err := run(ctx, []string{"collect", "--claude-dir", filepath.Join(home, ".claude"), "--codex-dir", filepath.Join(home, ".codex"),
		"--state", filepath.Join(t.TempDir(), "state.json"), "--token", "not-a-token"})
	if err == nil || !strings.Contains(err.Error(), "refused the token") {
		t.Fatalf("collect with a refused token: %v, want it to stop saying the token was refused", err)
	}
	if ctx.Err() != nil {
		t.Fatal("collect ran until the test's deadline")
	}
}
