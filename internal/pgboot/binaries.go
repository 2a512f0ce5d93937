package pgboot

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
)

// debianBinGlob is where Debian and Ubuntu install each major version.
const debianBinGlob = "/usr/lib/postgresql/*/bin"

// findBinDir returns the first directory holding both initdb and pg_ctl, or
// "" if there is none. pg_ctl finds postgres beside itself.
func findBinDir(binDirs []string) string {
	if binDirs == nil {
		binDirs = defaultBinDirs()
	}
	for _, dir := range binDirs {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "pg_ctl")) {
			return dir
		}
	}
	return ""
}

// defaultBinDirs is initdb's directory on PATH (symlinks resolved, so a
// /usr/local/bin link leads to the real installation), then the Debian
// directories, newest major version first.
func defaultBinDirs() []string {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	return append(dirs, debianBinDirs()...)
}

func debianBinDirs() []string {
	dirs, _ := filepath.Glob(debianBinGlob)
	slices.SortFunc(dirs, func(a, b string) int {
		return cmp.Compare(majorVersion(b), majorVersion(a))
	})
	return dirs
}

// majorVersion reads 15 from /usr/lib/postgresql/15/bin; 0 if it cannot.
func majorVersion(binDir string) float64 {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	if err != nil {
		return 0
	}
	return v
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
