package collect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

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
// transcript). So the collector waits claimWait before it reads a new
// file, and leaves alone every app session claimed or kind run
// (apps.Options.LeaveRun). A claim stays after the run: the session is
// spine run's for good.

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
