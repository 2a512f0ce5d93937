//go:build !unix

package collect

import (
	"errors"
	"os"
)

// tryLock cannot lock where flock is missing: a run marker (see MarkRun)
// is then taken as live until its run removes it.
func tryLock(*os.File) error { return errors.ErrUnsupported }

func lockUnsupported(err error) bool { return errors.Is(err, errors.ErrUnsupported) }

// lockState takes no lock where flock is missing: run one collector per
// state file.
func lockState(string) (*os.File, error) { return nil, nil }
