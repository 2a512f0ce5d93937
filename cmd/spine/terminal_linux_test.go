package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/spinehq/spine/auth"
)

// openPTY opens a pseudo-terminal pair, as `docker run -t` or an ssh
// session gives a process: serve writes to the terminal, the test reads
// what it shows from the master.
func openPTY(t *testing.T) (master, term *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pty: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, term
}

// A character device is not a terminal: /dev/null is one, and serve run
// with 2>/dev/null, or by a service manager that hands it /dev/null, must
// not take it for one.
func TestIsTerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	_, term := openPTY(t)
	defer term.Close()
	for _, c := range []struct {
		name string
		f    *os.File
		want bool
	}{{"/dev/null", null, false}, {"a pipe", w, false}, {"a file", file, false}, {"a pty", term, true}} {
		if got := isTerminal(c.f); got != c.want {
			t.Errorf("isTerminal(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}

// On a terminal serve prints a development token (org dev, member dev)
// that its own secret signed.
func TestServePrintsTokenOnTerminal(t *testing.T) {
	master, term := openPTY(t)
	out, dataDir := serveTo(t, master, term)
	tok := jwtRE.FindString(out)
	if !strings.Contains(out, "export SPINE_TOKEN="+tok) || tok == "" {
		t.Fatalf("serve's output on a terminal holds no token:\n%s", out)
	}
	secret, err := auth.LoadSecret(filepath.Join(dataDir, "token.secret"))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := auth.NewSigner(secret)
	if err != nil {
		t.Fatal(err)
	}
	c, err := signer.Verify(tok, auth.AudienceMember, time.Now())
	if err != nil || c.Org != "dev" || c.Member != "dev" || c.IsAdmin() {
		t.Fatalf("serve's token: %+v %v", c, err)
	}
}
