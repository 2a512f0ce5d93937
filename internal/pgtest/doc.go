// Package pgtest gives each test a PostgreSQL database of its own, already at
// the current schema, in milliseconds.
//
// A test package migrates one template database per schema version, once,
// and every test then gets a copy made by CREATE DATABASE … TEMPLATE, which
// copies files instead of replaying migrations:
//
//	func TestMain(m *testing.M) {
//		pgtest.Main(m, migrations.Hash(), migrations.Apply)
//	}
//
//	func TestSomething(t *testing.T) {
//		pool, _ := pgtest.New(t) // dropped when the test ends
//		...
//	}
//
// A TestMain that also wants goleak calls Setup and hands m to goleak:
//
//	func TestMain(m *testing.M) {
//		if err := pgtest.Setup(context.Background(), key, migrate); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		goleak.VerifyTestMain(m)
//	}
//
// # Which server
//
// SPINE_TEST_DATABASE_URL, when set, must be a postgres:// URL of an admin
// database (one whose user may CREATE DATABASE); tests never look at
// SPINE_DATABASE_URL, so they cannot touch a real deployment by accident.
// Otherwise pgboot.Find looks for a server on 127.0.0.1:5432 and, failing
// that, starts a private cluster in os.TempDir()/spine-test-pg-<uid>.
//
// That private cluster is shared by all test processes of the user (go test
// runs packages in parallel, as separate processes) and is deliberately left
// running when they exit, so the next run starts in milliseconds instead of
// paying for initdb. A file lock beside it makes sure one process at a time
// creates or starts it. Stop it with
//
//	pg_ctl stop -D /tmp/spine-test-pg-$(id -u)/pg
//
// (as root: runuser -u postgres -- pg_ctl stop -D /tmp/spine-test-pg-0/pg),
// or delete the directory to start over.
//
// # Templates and clones
//
// The template is named spine_tmpl_<first 12 hex digits of sha256(key)>, so
// a change to the migrations (and so to the key) gets a fresh template while
// other branches' templates stay usable. It is built under an exclusive
// advisory lock and marked ready by ALTER DATABASE … IS_TEMPLATE, so a run
// that died mid-migration is rebuilt rather than trusted. Clones take the same
// lock shared: they run in parallel with each other but never while a
// template is being built and connected to, which CREATE DATABASE forbids.
//
// Clones are named spine_t_<random> and dropped WITH (FORCE) in t.Cleanup.
// A test binary killed before its cleanups run leaves its clones behind;
// they are harmless and can be removed with DROP DATABASE.
package pgtest
