package pgboot

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoPostgres is returned (wrapped) when no PostgreSQL can serve spine: none
// was configured, none answers locally, and no private cluster could be
// started.
var ErrNoPostgres = errors.New("no PostgreSQL available")

// noPostgresError explains, in one paragraph, what Find tried and how to make
// the next attempt succeed.
func noPostgresError(localAddr, localWhy, clusterDir string) error {
	return fmt.Errorf("%w: SPINE_DATABASE_URL is not set, %s, and no PostgreSQL "+
		"binaries (initdb, pg_ctl) were found on PATH or in %s. Set "+
		"SPINE_DATABASE_URL=postgres://USER@HOST:5432/spine, or start the local "+
		"server on %s (e.g. `pg_ctlcluster 15 main start` / `systemctl start "+
		"postgresql`), or install PostgreSQL (`apt-get install postgresql`) so "+
		"spine can start a private one under %s",
		ErrNoPostgres, localWhy, debianBinGlob, localAddr, clusterDir)
}

// localFailure summarises why the local server could not be used.
func localFailure(addr string, dialErr error, refused []string, lastErr error) string {
	if dialErr != nil {
		return fmt.Sprintf("nothing answers on %s", addr)
	}
	return fmt.Sprintf("the server on %s did not let spine in as %s (%v)",
		addr, strings.Join(refused, ", "), lastErr)
}
