//go:build unix

package collect

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// A state file on a file system without locks (flock's ENOTSUP on some
// network mounts, ENOLCK on NFS without its lock daemon) is an error that
// names the cause and the way out, not another collector.
func TestLockUnsupportedSaysSo(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOTSUP, syscall.EOPNOTSUPP, syscall.ENOLCK} {
		err := lockFailed("/mnt/nfs/state.json", errno)
		if errors.Is(err, ErrStateLocked) || !strings.Contains(err.Error(), "does not support file locks") ||
			!strings.Contains(err.Error(), "--state") {
			t.Fatalf("%v: %v", errno, err)
		}
	}
	if err := lockFailed("/s", syscall.EWOULDBLOCK); !errors.Is(err, ErrStateLocked) {
		t.Fatalf("EWOULDBLOCK: %v", err)
	}
}
