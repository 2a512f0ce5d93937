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
// migration changes shape only, with one kind of exception: a table or
// column derived wholly from other projection tables may be filled from
// them, as 006 fills cost_days from router_calls and 014 a router call's
// machine from accounting_sessions, so an upgraded database answers at
// once. The projector keeps it from then on, a rebuild makes it from the
// log, and a test holds the backfill equal to what the projector writes.
//
// Each table has one package that writes it; docs/design.md#ownership lists
// them.
package migrations
