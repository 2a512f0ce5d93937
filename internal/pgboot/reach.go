package pgboot

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// checkReachable fails early, and says why, when the user the programs run
// as cannot walk down to dir: initdb would otherwise fail with a bare
// "permission denied". Only existing directories are checked; the ones
// MkdirAll creates later are 0755.
func (r *runner) checkReachable(dir string) error {
	if r.cred == nil {
		return nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		if err := r.checkSearchable(d); err != nil {
			return err
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func (r *runner) checkSearchable(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil // not there yet, or not ours to judge
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || r.canSearch(fi.Mode(), st) {
		return nil
	}
	return fmt.Errorf("the postgres OS user, which runs the private cluster because spine "+
		"is root, cannot enter %s (%v, owner uid %d); make it searchable (chmod o+x %s) "+
		"or choose a data directory elsewhere", dir, fi.Mode(), st.Uid, dir)
}

// canSearch applies the permission bits as the kernel would for r.cred,
// which carries no supplementary groups.
func (r *runner) canSearch(mode fs.FileMode, st *syscall.Stat_t) bool {
	switch {
	case st.Uid == r.cred.Uid:
		return mode&0o100 != 0
	case st.Gid == r.cred.Gid:
		return mode&0o010 != 0
	default:
		return mode&0o001 != 0
	}
}
