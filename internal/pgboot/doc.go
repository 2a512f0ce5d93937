// Package pgboot finds a PostgreSQL for spine to use, starting one if it must.
//
// spine should run with no configuration at all, so Find tries, in order:
//
//  1. Options.URL (SPINE_DATABASE_URL), used exactly as given. If it does not
//     answer, Find fails rather than silently using some other database.
//  2. A server on Options.LocalAddr (127.0.0.1:5432), reached as $PGUSER, then
//     the current OS user, then "postgres", without a password. Find creates
//     Options.Database there if it is missing.
//  3. A private cluster under Options.DataDir/pg, created with initdb on the
//     first run and started with pg_ctl on a free loopback port. The binaries
//     come from PATH or /usr/lib/postgresql/<version>/bin (newest first).
//
// initdb and postgres refuse to run as root. When spine is root, Find runs
// them as the "postgres" OS user and hands it the cluster directory; every
// directory above DataDir must then be searchable by that user (o+x).
//
// A private cluster outlives a crashed spine: the next Find sees it running
// and reuses it, and a stale postmaster.pid left by a crash is removed. The
// server runs in its own process group, so a Ctrl-C aimed at spine does not
// take the database down before spine has shut down; Result.Stop does that.
//
// When nothing can serve, the error wraps ErrNoPostgres and says what was
// tried and what to do about it, fit to print as-is:
//
//	res, err := pgboot.Find(ctx, pgboot.Options{
//		URL:     os.Getenv("SPINE_DATABASE_URL"),
//		DataDir: "./data",
//		Logger:  logger,
//	})
//	if err != nil {
//		return fmt.Errorf("find postgres: %w", err)
//	}
//	defer res.Stop()
//	pool, err := pgxpool.New(ctx, res.URL)
package pgboot
