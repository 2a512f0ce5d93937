//go:build unix

package collect

import (
	"fmt"
	"os"
	"syscall"
)

// fileID is the file's device and inode: a file rewritten by rename has a
// new one.
func fileID(fi os.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	}
	return ""
}
