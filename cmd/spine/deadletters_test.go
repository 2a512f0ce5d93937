package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/server"
)

// spine deadletters lists the caller's refused envelopes with their
// reasons, pages them, reads one with its message, and shows nothing of
// another member's.
func TestDeadLettersCommand(t *testing.T) {
	n, caughtUp := testNode(t)
	file := filepath.Join(t.TempDir(), "late.jsonl")
	lines := `{"v":1,"type":"session.start","id":"dl-start","at":"2026-11-29T10:00:00Z","sessionId":"dl-1","app":"codex","kind":"run"}
{"v":1,"type":"session.end","id":"dl-end","at":"2026-11-29T10:00:01Z","sessionId":"dl-1","status":"done"}
{"v":1,"type":"session.end","id":"dl-end-again","at":"2026-11-29T10:00:02Z","sessionId":"dl-1","status":"failed"}
{"v":1,"type":"session.chunk","id":"dl-c5","at":"2026-11-29T10:00:03Z","sessionId":"dl-1","seq":5,"stream":"stdout","text":"late"}
`
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := capture(t, "publish", file); err != nil || !strings.Contains(out, "4 accepted") {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	caughtUp()

	out, err := capture(t, "deadletters")
	if err != nil {
		t.Fatal(err)
	}
	want := `DEAD LETTER       AT                    MEMBER  REASON         TYPE           SESSION  ID            DETAIL
SPINE_SESSIONS:3  YYYY-MM-DDThh:mm:ssZ  dev     session_ended  session.end    dl-1     dl-end-again  session dl-1 already ended
SPINE_SESSIONS:4  YYYY-MM-DDThh:mm:ssZ  dev     session_ended  session.chunk  dl-1     dl-c5         chunk 5 after the session ended
`
	if got := withoutTimes(out); got != want {
		t.Errorf("spine deadletters:\n%s\nwant:\n%s", got, want)
	}
	out, err = capture(t, "deadletters", "--limit", "1")
	if err != nil || !strings.HasSuffix(out, "more dead letters follow: --after SPINE_SESSIONS:3\n") {
		t.Errorf("spine deadletters --limit 1 = %v\n%s", err, out)
	}
	out, err = capture(t, "deadletters", "--after", "SPINE_SESSIONS:3", "--json")
	var page server.DeadLetterList
	if err != nil || json.Unmarshal([]byte(out), &page) != nil || len(page.DeadLetters) != 1 || page.DeadLetters[0].ID != "dl-c5" || page.More {
		t.Errorf("spine deadletters --after --json = %v\n%s", err, out)
	}
	out, err = capture(t, "deadletters", "SPINE_SESSIONS:4")
	if err != nil || !strings.Contains(out, "reason      session_ended\n") || !strings.Contains(out, `message     {"v":1,"type":"session.chunk","id":"dl-c5"`) {
		t.Errorf("spine deadletters SPINE_SESSIONS:4 = %v\n%s", err, out)
	}

	// Another member of the org sees none of them, and reading one is a 404.
	other, err := n.Signer.Mint(auth.Claims{Org: "dev", Member: "someone-else"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := capture(t, "deadletters", "--token", other); err != nil || out != "no dead letters\n" {
		t.Errorf("another member's spine deadletters = %v\n%s", err, out)
	}
	if _, err := capture(t, "deadletters", "SPINE_SESSIONS:4", "--token", other); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("another member reads a dead letter: %v", err)
	}
	if _, err := capture(t, "deadletters", "nope"); err == nil || !strings.Contains(err.Error(), "STREAM:SEQ") {
		t.Errorf("spine deadletters nope = %v", err)
	}
}

var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// withoutTimes blanks the log's store times (wall-clock), keeping their
// width and so the table's alignment.
func withoutTimes(out string) string { return rfc3339.ReplaceAllString(out, "YYYY-MM-DDThh:mm:ssZ") }
