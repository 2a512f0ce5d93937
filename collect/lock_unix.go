//go:build unix

package collect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting. The lock goes
// with the process, so one a process killed held is free again.
func tryLock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// lockState takes an exclusive lock on the state file's lock file
// (state + ".lock"), without waiting: two collectors sharing one state
// file would overwrite each other's offsets. A collector killed leaves
// no lock behind.
func lockState(statePath string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(statePath), 0o700); err != nil {
		return nil, fmt.Errorf("lock state: %w", err)
	}
	f, err := os.OpenFile(statePath+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock state: %w", err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		return nil, lockFailed(statePath, err)
	}
	return f, nil
}

// lockFailed says why the state could not be locked: another collector
// holds it, or its file system has no locks.
func lockFailed(statePath string, err error) error {
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%w: %s is used by another spine collect (one collector per state file: stop it, or pass another --state)",
			ErrStateLocked, statePath)
	}
	if lockUnsupported(err) {
		return fmt.Errorf("lock state %s: its file system does not support file locks (flock: %v; an NFS or SMB "+
			"mount, say): pass --state with a path on a local disk", statePath, err)
	}
	return fmt.Errorf("lock state %s: %w", statePath, err)
}

// lockUnsupported reports whether flock failed because the file system
// has no locks (ENOTSUP, EOPNOTSUPP: some network file systems; ENOLCK: an
// NFS mount without its lock daemon).
func lockUnsupported(err error) bool {
	return errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOLCK)
}
