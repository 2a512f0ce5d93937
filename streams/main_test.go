package streams_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/migrations"
)

// TestMain builds (once) the migrated template every test clones its
// database from, runs the tests, and fails if one left a goroutine behind
// (a projector not stopped, an embedded server not shut down).
func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	err := pgtest.Setup(ctx, migrations.Key(), func(ctx context.Context, c *pgx.Conn) error {
		_, err := migrations.Up(ctx, c)
		return err
	})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m)
}
