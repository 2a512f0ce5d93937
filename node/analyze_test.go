package node_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/node"
)

// A table that changed by more than autovacuum's rule is analysed, once.
func TestAnalyzeStaleRefreshesChangedTables(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.n.Pool.Exec(ctx, `INSERT INTO dead_letters (stream, seq, subject, reason, detail, data, at)
		SELECT 'SPINE_SESSIONS', g, 'spine.x', 'test', '', '\x00'::bytea, now() FROM generate_series(1, 500) g`); err != nil {
		t.Fatal(err)
	}
	// PostgreSQL publishes table statistics about once a second.
	deadline := time.Now().Add(spinetest.WaitTimeout)
	for {
		tables, err := node.AnalyzeStale(ctx, f.n.Pool)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(tables, "dead_letters") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dead_letters never analysed; analysed %v", tables)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var analysed bool
	if err := f.n.Pool.QueryRow(ctx, `SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables
		WHERE relname = 'dead_letters' AND schemaname = current_schema()`).Scan(&analysed); err != nil || !analysed {
		t.Fatalf("last_analyze not set (%v)", err)
	}
	tables, err := node.AnalyzeStale(ctx, f.n.Pool)
	if err != nil || slices.Contains(tables, "dead_letters") {
		t.Fatalf("analysed again: %v %v", tables, err)
	}
}
