package pgboot

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"time"
)

// waitDelay bounds how long a finished command's output is awaited, in case
// a child it forked holds the pipe open.
const waitDelay = 5 * time.Second

// runner runs PostgreSQL's programs from binDir, as the "postgres" OS user
// when spine is root (initdb and postgres refuse root), else as ourselves.
type runner struct {
	binDir string
	cred   *syscall.Credential // nil = our own identity
}

func newRunner(binDir string) (*runner, error) {
	r := &runner{binDir: binDir}
	if os.Geteuid() != 0 {
		return r, nil
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	r.cred = cred
	return r, nil
}

func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and initdb refuses root, but there is "+
			"no \"postgres\" OS user to run it as (create one, e.g. `useradd -r postgres`, "+
			"or run spine as a normal user): %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse uid of postgres: %w", err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse gid of postgres: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// chown hands path to the identity the programs run as.
func (r *runner) chown(path string) error {
	if r.cred == nil {
		return nil
	}
	if err := os.Chown(path, int(r.cred.Uid), int(r.cred.Gid)); err != nil {
		return fmt.Errorf("chown %s to postgres: %w", path, err)
	}
	return nil
}

// run runs program in dir and returns its combined output. The process gets
// its own process group so that a terminal's Ctrl-C, meant for spine, does
// not reach a server that pg_ctl starts.
func (r *runner) run(ctx context.Context, dir, program string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, r.binDir+"/"+program, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred, Setpgid: true}
	cmd.WaitDelay = waitDelay
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.Bytes(), err
}
