package collect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/streams"
)

// A claim is how spine run tells a collector on the same machine that it
// records an app session itself, from the app's own output: an empty file
// named by the session's spine id (apps.SessionID) in the claims
// directory, made as soon as spine run's translation meets the session,
// before anything of it is published. spine would say the same (the
// session is kind run) once it has spine run's start, but the app writes
// its transcript at the moment spine run starts, and the collector would
// record it first as its own (kind attach, chunks numbered by the
// transcript). So while a spine run is running on the machine (its run
// marker, see MarkRun) the collector waits up to claimWait before it reads
// a new file, unless the file's session is claimed already; and it leaves
// alone every app session claimed or kind run (apps.Options.LeaveRun). A
// claim stays after the run: the session is spine run's for good.

// Claim marks the app session of spine id sessionID as recorded by spine
// run, in dir.
func Claim(dir, sessionID string) error {
	if !streams.ValidID(sessionID) {
		return fmt.Errorf("claim %q: not a session id", sessionID)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("claim %s: %w", sessionID, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, sessionID), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("claim %s: %w", sessionID, err)
	}
	return f.Close()
}

// DefaultClaimsDir is the claims directory beside a spool directory
// (DIR-claims, outside it: the spool holds spool files only): spine
// run's, which spine collect finds the same way (SPINE_SPOOL_DIR, else
// spine/spool in the user's config dir).
func DefaultClaimsDir(spoolDir string) string { return filepath.Clean(spoolDir) + "-claims" }

// claimed reports whether sessionID's claim is in dir.
func claimed(dir, sessionID string) bool {
	if dir == "" || !streams.ValidID(sessionID) {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, sessionID))
	return err == nil // a claims directory that cannot be read claims nothing
}

// Claimed reports whether spine run has claimed the session (apps.Claimer).
func (g *gate) Claimed(sessionID string) bool { return claimed(g.claims, sessionID) }

// Recorded is the sink's answer, but kind run for a claimed session.
func (g *gate) Recorded(ctx context.Context, id string) (apps.Recorded, error) {
	if claimed(g.claims, id) {
		return apps.Recorded{Started: true, Kind: "run"}, nil
	}
	return g.Sink.Recorded(ctx, id)
}

// runMarkerExt ends a run marker's name: a dot is in no session id, so a
// marker is never taken for a claim.
const runMarkerExt = ".run"

// MarkRun marks a spine run (or a runner's task) as running in dir, the
// claims directory, from before it starts the app until release: a file
// PID-NANOS.run that the run holds locked (flock), so a collector waits
// for claims only while a run could be making one. The lock goes with the
// process: a killed run's marker is found unlocked, taken as stale and
// removed. The marker is locked before it has its name (NAME.new first),
// so none is ever seen unlocked while its run lives. Where the file
// system has no locks the marker is made all the same, and counts as live
// until its run removes it.
func MarkRun(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mark run: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%d-%d%s", os.Getpid(), time.Now().UnixNano(), runMarkerExt))
	f, err := os.OpenFile(path+".new", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("mark run: %w", err)
	}
	fail := func(err error) (func(), error) {
		f.Close()
		_ = os.Remove(path + ".new")
		return nil, fmt.Errorf("mark run: %w", err)
	}
	if err := tryLock(f); err != nil && !lockUnsupported(err) {
		return fail(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		return fail(err)
	}
	return func() {
		_ = os.Remove(path) // before the lock goes: never seen unlocked
		f.Close()
	}, nil
}

// runLive reports whether a run marker in dir is held: a spine run could
// be about to claim a session. A marker that can be locked is a dead
// run's and is removed; one that cannot (held, or no locks there) is live.
func runLive(dir string) bool {
	if dir == "" {
		return false
	}
	markers, _ := filepath.Glob(filepath.Join(dir, "*"+runMarkerExt))
	live := false
	for _, m := range markers {
		if markerHeld(m) {
			live = true // the others are still looked at, to remove the stale
		}
	}
	return live
}

func markerHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false // released meanwhile
	}
	defer f.Close()
	if tryLock(f) != nil {
		return true
	}
	_ = os.Remove(path) // names are never reused: this is the dead run's
	return false
}

// fileSession is the spine id of the session a file's name says it holds
// (Claude Code's SESSION.jsonl, Codex's rollout-TIME-SESSION.jsonl), ""
// when it says none (a subagent's transcript).
func fileSession(path string, format apps.Format) string {
	name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if format == apps.FormatCodexRollout {
		const uuidLen = 36
		if len(name) < len("rollout-")+uuidLen {
			return ""
		}
		name = name[len(name)-uuidLen:]
	}
	if !streams.ValidID(name) {
		return ""
	}
	return apps.SessionID(format.App(), name)
}
