package collect

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spinehq/spine/importer"
)

// newFileCollector is a collector of home whose clock stands still at the
// moment a transcript of crudTranscript was written there: every pass
// sees the file brand-new, however long the test takes.
func newFileCollector(t *testing.T, claims string) (*Collector, string) {
	t.Helper()
	home := t.TempDir()
	path := writeCrud(t, home)
	written := time.Now().Truncate(time.Second)
	if err := os.Chtimes(path, written, written); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{ClaudeDir: home, StatePath: filepath.Join(t.TempDir(), "state.json"), Machine: "m1",
		Sink: importer.DiscardSink{}, ClaimsDir: claims})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.now = func() time.Time { return written }
	return c, path
}

// read reports whether a pass read the file (its offset moved).
func read(t *testing.T, c *Collector, path string) bool {
	t.Helper()
	if err := c.pass(context.Background(), c.quiet()); err != nil {
		t.Fatal(err)
	}
	return c.st.Files[path] != nil && c.st.Files[path].Offset > 0
}

// With no spine run marked running on the machine, nothing can claim a
// new file's session: the collector reads a brand-new file at its first
// pass, without the wait for a claim. A dead run's marker (unlocked: its
// lock went with its process) is no run, and is removed.
func TestNewFileReadAtOnceWithoutARun(t *testing.T) {
	claims := t.TempDir()
	dead := filepath.Join(claims, "4242-1"+runMarkerExt)
	if err := os.WriteFile(dead, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c, path := newFileCollector(t, claims)
	if !read(t, c, path) || !c.wake.IsZero() {
		t.Fatalf("a brand-new file with no spine run here was held (wake %v)", c.wake)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("the dead run's marker is still there (%v)", err)
	}
	// No claims directory at all: nothing is ever claimed, nothing waits.
	c, path = newFileCollector(t, "")
	if !read(t, c, path) {
		t.Fatal("a brand-new file with no claims directory was held")
	}
}

// While a spine run is marked running, a brand-new file waits for its
// claim, pass after pass; the claim of the session its name says ends the
// wait (the gate then leaves the session alone), and so does the run's end.
func TestNewFileWaitsWhileARunLives(t *testing.T) {
	claims := t.TempDir()
	release, err := MarkRun(claims)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	c, path := newFileCollector(t, claims)
	for range 2 {
		if read(t, c, path) || c.wake.IsZero() {
			t.Fatalf("a brand-new file was read while a spine run lives and nothing is claimed (wake %v)", c.wake)
		}
	}
	if err := Claim(claims, "8122657c-fe54-4dc9-89a3-20049e8a84f7"); err != nil {
		t.Fatal(err)
	}
	if !read(t, c, path) {
		t.Fatal("the file of a claimed session still waits")
	}

	claims = t.TempDir() // nothing claimed there
	release, err = MarkRun(claims)
	if err != nil {
		t.Fatal(err)
	}
	c, path = newFileCollector(t, claims)
	if read(t, c, path) {
		t.Fatal("read while the run lives")
	}
	release()
	if !read(t, c, path) {
		t.Fatal("the file still waits after the run ended")
	}
	if m, _ := filepath.Glob(filepath.Join(claims, "*"+runMarkerExt+"*")); len(m) != 0 {
		t.Fatalf("markers left after the run: %v", m)
	}
}
