//go:build unix

package collect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockState takes an exclusive lock on the state file's lock file
// (state + ".lock"), without waiting: two collectors sharing one state
// file would overwrite each other's offsets. The lock goes with the
// process (flock), so a collector killed leaves none behind.
func lockState(statePath string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(statePath), 0o700); err != nil {
		return nil, fmt.Errorf("lock state: %w", err)
	}
	f, err := os.OpenFile(statePath+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock state: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is used by another spine collect (one collector per state file: stop it, or pass another --state)",
				ErrStateLocked, statePath)
		}
		return nil, fmt.Errorf("lock state %s: %w", statePath, err)
	}
	return f, nil
}
