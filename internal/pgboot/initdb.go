package pgboot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// initdb creates the cluster. It builds it beside its final place and
// renames it there, so an interrupted initdb never leaves a half-made
// cluster that later runs would try to start.
func (c *cluster) initdb(ctx context.Context) error {
	tmp := c.dir + ".initdb"
	if err := c.prepareInitDir(tmp); err != nil {
		return err
	}
	c.log.Info("pgboot: initialising private postgres (initdb)", "dir", c.dir)
	out, err := c.run.run(ctx, tmp, "initdb", "-D", tmp, "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--no-locale")
	if err != nil {
		return fmt.Errorf("initdb %s: %w%s", tmp, err, quote(out))
	}
	return c.moveInto(tmp)
}

// prepareInitDir makes an empty directory, owned by whoever runs initdb, in
// place of any leftover from an interrupted attempt.
func (c *cluster) prepareInitDir(tmp string) error {
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove leftover %s: %w", tmp, err)
	}
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	return c.run.chown(tmp)
}

// moveInto renames the new cluster to c.dir, which may exist only as an
// empty directory.
func (c *cluster) moveInto(tmp string) error {
	err := os.Remove(c.dir)
	if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("%s is not empty but holds no PostgreSQL cluster (no PG_VERSION); "+
			"move it away so spine can create one", c.dir)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replace %s: %w", c.dir, err)
	}
	if err := os.Rename(tmp, c.dir); err != nil {
		return fmt.Errorf("move new cluster into place: %w", err)
	}
	return nil
}
