package streams_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/migrations"
)

// TestMain builds (once) the migrated template every test clones its
// database from.
func TestMain(m *testing.M) {
	pgtest.Main(m, migrations.Key(), func(ctx context.Context, c *pgx.Conn) error {
		_, err := migrations.Up(ctx, c)
		return err
	})
}
