// Package migrations holds spine's numbered SQL migrations, embedded in the
// binary, and applies them.
//
// Each file is NNN_name.sql. Up applies the ones a database has not seen,
// each in one transaction together with its row in schema_migrations, under
// an advisory lock so two spine instances starting together do not race:
//
//	applied, err := migrations.Up(ctx, conn)
//
// Projections are rebuilt from the log, never from a migration's data, so a
// migration changes shape only.
package migrations
