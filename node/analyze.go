package node

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultAnalyzeInterval is how often a node looks for tables whose
// planner statistics have gone stale (see AnalyzeStale).
const DefaultAnalyzeInterval = 30 * time.Second

// AnalyzeStale runs ANALYZE on every table of the current schema whose rows
// changed since it was last analysed by more than autovacuum's default
// rule allows (50 rows plus 10% of the table), and returns their names.
//
// Autovacuum does this where it runs, but it can be off (this repository's
// CI machine turns it off), and a table never analysed is planned as if it
// were nearly empty: a read by id then walks a member's index past every
// one of their sessions. ANALYZE takes no lock that blocks reads or
// writes; where autovacuum runs, it has usually been there first.
func AnalyzeStale(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT relname FROM pg_stat_user_tables
		WHERE schemaname = current_schema() AND n_mod_since_analyze > 50 + 0.1 * greatest(n_live_tup, 0)
		ORDER BY relname`)
	if err != nil {
		return nil, fmt.Errorf("find stale statistics: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("find stale statistics: %w", err)
	}
	for _, t := range tables {
		if _, err := pool.Exec(ctx, "ANALYZE "+pgx.Identifier{t}.Sanitize()); err != nil {
			return nil, fmt.Errorf("analyze %s: %w", t, err)
		}
	}
	return tables, nil
}

// startAnalyzer runs AnalyzeStale every interval until the node stops.
func (n *Node) startAnalyzer(context.Context) error {
	every := n.opts.AnalyzeInterval
	if every == 0 {
		every = DefaultAnalyzeInterval
	}
	if every < 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for { // once at start (a database restored or migrated while spine was down), then every interval
			tables, err := AnalyzeStale(ctx, n.Pool)
			switch {
			case err != nil && ctx.Err() == nil:
				n.log.Warn("refresh planner statistics", "err", err)
			case len(tables) > 0:
				n.log.Debug("planner statistics refreshed", "tables", tables)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	n.stops = append(n.stops, func() { cancel(); <-done })
	return nil
}
