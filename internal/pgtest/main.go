package pgtest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvAdminURL names the variable that points tests at a server of one's
// choosing: a postgres:// URL of a database whose user may CREATE DATABASE.
const EnvAdminURL = "SPINE_TEST_DATABASE_URL"

// setupTimeout bounds finding a server and building the template.
const setupTimeout = 5 * time.Minute

// MigrateFunc brings an empty database to the current schema.
type MigrateFunc func(ctx context.Context, conn *pgx.Conn) error

// Set by Setup, before any test runs; read-only afterwards.
var (
	adminURL string
	template string
)

// Main is the whole of a TestMain: it finds PostgreSQL, makes sure the
// template for key exists, runs the tests and exits. key must change
// whenever migrate's result would, e.g. a hash of the migration files.
func Main(m *testing.M, key string, migrate MigrateFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	err := Setup(ctx, key, migrate)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// Setup does Main's work short of running the tests, for a TestMain that
// runs them some other way (goleak.VerifyTestMain, say).
func Setup(ctx context.Context, key string, migrate MigrateFunc) error {
	admin, err := findAdmin(ctx)
	if err != nil {
		return err
	}
	name := templateName(key)
	if err := ensureTemplate(ctx, admin, name, migrate); err != nil {
		return err
	}
	adminURL, template = admin, name
	return nil
}

// AdminURL is the admin database's URL, for tests that manage databases
// themselves. It is "" before Setup.
func AdminURL() string { return adminURL }
