package streams

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Querier is what a read needs of a pool, a connection or a transaction
// (*pgxpool.Pool, *pgx.Conn, pgx.Tx). Every package's reads take one, so a
// handler can read inside the transaction it writes in and a server reads
// from its pool with the same function.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
