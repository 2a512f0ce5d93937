package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/internal/apprig"
	"github.com/spinehq/spine/internal/checksum"
	"github.com/spinehq/spine/internal/fakemodel"
)

// collectProcess is the real spine collect binary running as a process.
type collectProcess struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
}

func startCollectProcess(t *testing.T, args ...string) *collectProcess {
	t.Helper()
	p := &collectProcess{cmd: exec.Command(builtSpine(t), append([]string{"collect"}, args...)...), stderr: &strings.Builder{}}
	p.cmd.Env = os.Environ() // SPINE_URL and SPINE_TOKEN, as testNode set them
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// kill9 kills the collector with SIGKILL: no chance to save or flush.
func (p *collectProcess) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := p.cmd.Wait()
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("collect did not die of SIGKILL: %v\n%s", err, p.stderr)
	}
}

// The real spine collect binary, killed with SIGKILL twice while a real
// Claude Code session writes its transcript (each time mid-session: the
// app paused inside its own Bash call, then going on while no collector
// runs) and started again: nothing is lost or stored twice — the log holds
// exactly the translation's envelopes but the end, and the session reads
// as far as the transcript goes. A last `spine collect --once --idle 1ms`
// ends the session with its usage, the fake model's; then `spine import`
// of the same files publishes nothing and changes no projection: the same
// session ids, chunk counts and usage.
func TestCollectKill9(t *testing.T) {
	n, caughtUp := testNode(t)
	srv := fakemodel.Start(t)
	c := apprig.NewClaude(t, srv, nil)
	scriptPausedTurns(srv, c, "kill", fakemodel.Usage{Input: 5, Output: 30, CacheRead: 8000, CacheWrite5m: 400})
	claudeDir := filepath.Join(c.Home, ".claude")
	args := []string{"--claude-dir", claudeDir, "--codex-dir", "", "--state", filepath.Join(t.TempDir(), "state.json"), "--machine", "m9"}
	ran := make(chan *apprig.ClaudeRun, 1)

	col := startCollectProcess(t, args...)
	go func() { ran <- c.Run("work in three steps", nil) }()
	var id string
	eventually(t, "the first turn through spine", func() bool {
		if id == "" {
			id = transcriptSession(c)
		}
		return id != "" && spineHas(t, id, "kill-marker-one")
	})
	// While the session runs its usage so far is on it: the first turn's.
	u1 := servedUsage(srv.Log()[:1])
	eventually(t, "the first turn's usage on the running session", func() bool {
		s := sessionOf(t, id)
		raw, _ := json.Marshal(s["tokens"])
		var tk *accounting.Tokens
		return json.Unmarshal(raw, &tk) == nil && s["endedAt"] == nil && tk != nil && *tk == *accounting.Normalise(&u1)
	})
	col.kill9(t)

	touch(t, filepath.Join(c.Dir, "go1"))
	eventually(t, "the second turn on disk", func() bool { return onDisk(c, "kill-marker-two") })
	col = startCollectProcess(t, args...)
	eventually(t, "the second turn through spine", func() bool { return spineHas(t, id, "kill-marker-two") })
	col.kill9(t)

	touch(t, filepath.Join(c.Dir, "go2"))
	res := <-ran
	if res.ExitCode != 0 {
		t.Fatalf("claude exit %d\n%s", res.ExitCode, res.Stderr)
	}
	col = startCollectProcess(t, args...)
	eventually(t, "the last turn through spine", func() bool { return spineHas(t, id, "kill-marker-three") })
	col.kill9(t)
	caughtUp()
	dry := importJSON(t, append([]string{"--dry-run"}, res.Transcripts...)...)
	if dry.Sessions != 1 || dry.Responses != 3 {
		t.Fatalf("dry run: %+v", dry)
	}
	if got, want := stored(t, n), uint64(dry.Envelopes-1); got != want {
		t.Fatalf("collected %d envelopes, want every one of the translation's but the end: %d", got, want)
	}

	out, err := capture(t, append([]string{"collect", "--once", "--idle", "1ms"}, args...)...)
	if err != nil {
		t.Fatalf("collect --once: %v\n%s", err, out)
	}
	caughtUp()
	if got := stored(t, n); got != uint64(dry.Envelopes) {
		t.Fatalf("after the idle end the log holds %d envelopes, want the translation's %d", got, dry.Envelopes)
	}
	s := sessionOf(t, id)
	u := servedUsage(srv.Log())
	want := *accounting.Normalise(&u)
	if s["endedAt"] == nil || int(s["lastSeq"].(float64)) != int(dry.PerSession[0].Chunks) || s["workerId"] != "m9" {
		t.Fatalf("session after the idle end: %v; the translation has %d chunks", s, dry.PerSession[0].Chunks)
	}
	if row := routerCall(t, n, id); row.tokens != want || dry.Tokens != want {
		t.Fatalf("router call %+v, translation %+v; the model served %+v", row.tokens, dry.Tokens, want)
	}

	before, err := checksum.Compute(context.Background(), n.Pool)
	if err != nil {
		t.Fatal(err)
	}
	imp := importJSON(t, res.Transcripts...)
	caughtUp()
	after, err := checksum.Compute(context.Background(), n.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if imp.Envelopes != 0 || imp.AlreadyRecorded != 1 || imp.PerSession[0].SessionID != id {
		t.Fatalf("spine import after collect: %d envelopes, %d already recorded, sessions %+v", imp.Envelopes, imp.AlreadyRecorded, imp.PerSession)
	}
	if d := checksum.Diff(before, after); len(d) != 0 {
		t.Fatalf("the import changed %v", d)
	}
	if apps.SessionID("claude-code", res.SessionID) != id {
		t.Fatalf("session %s, the app ran %s", id, res.SessionID)
	}
}
