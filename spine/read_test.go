package spine_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
)

func TestMain(m *testing.M) { spinetest.Main(m) }

// A run's steps read back page by page, each with its observations, the
// run's notes on the first page only, and the run scoped to its owner.
func TestStepsPagesAndScope(t *testing.T) {
	ctx := context.Background()
	pool, _ := pgtest.New(t)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var b spine.Batch
	b.AddRun(spine.Run{ID: "r1", Kind: spine.KindSessionRecording, Org: "acme", Member: "alice", SessionID: "s1", CreatedAt: at})
	obs := 0
	for i := 1; i <= 5; i++ {
		id := spine.StepID("r1", i)
		b.AddStep(spine.Step{RunID: "r1", Idx: i, ID: id, Action: "command", Source: spine.SourceSession,
			Detail: json.RawMessage(`{"command":"make"}`), At: at})
		obs++
		b.AddObservation(spine.Observation{RunID: "r1", Idx: obs, StepID: id, Kind: spine.ObsResult, Body: json.RawMessage(`{"exitCode":0}`), At: at})
	}
	obs++
	b.AddObservation(spine.Observation{RunID: "r1", Idx: obs, Kind: spine.ObsNote, Body: json.RawMessage(`{"note":"hole"}`), At: at})
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx, tx); err != nil || b.Len() != 0 {
		t.Fatalf("flush: %v, %d left", err, b.Len())
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	p1, err := spine.Steps(ctx, pool, "r1", 0, 2)
	if err != nil || len(p1.Steps) != 2 || !p1.More || p1.Next != 2 || len(p1.Notes) != 1 || len(p1.Steps[0].Observations) != 1 {
		t.Fatalf("page 1 = %+v, %v", p1, err)
	}
	p3, err := spine.Steps(ctx, pool, "r1", 4, 2)
	if err != nil || len(p3.Steps) != 1 || p3.More || p3.Next != 5 || len(p3.Notes) != 0 {
		t.Fatalf("last page = %+v, %v", p3, err)
	}
	if _, err := spine.GetRun(ctx, pool, streams.Owner{Org: "acme", Member: "alice"}, "r1"); err != nil {
		t.Fatal(err)
	}
	_, other := spine.GetRun(ctx, pool, streams.Owner{Org: "acme", Member: "bob"}, "r1")
	_, missing := spine.GetRun(ctx, pool, streams.Owner{Org: "acme", Member: "alice"}, "r9")
	if !errors.Is(other, spine.ErrNotFound) || !errors.Is(missing, spine.ErrNotFound) {
		t.Fatalf("other member: %v, missing: %v", other, missing)
	}
	// An org's scope (Member "") reads any run of the org, never another org's.
	if r, err := spine.GetRunIn(ctx, pool, streams.Owner{Org: "acme"}, "r1"); err != nil || r.Member != "alice" {
		t.Fatalf("the org's scope: %+v, %v", r, err)
	}
	_, bob := spine.GetRunIn(ctx, pool, streams.Owner{Org: "acme", Member: "bob"}, "r1")
	_, globex := spine.GetRunIn(ctx, pool, streams.Owner{Org: "globex"}, "r1")
	if !errors.Is(bob, spine.ErrNotFound) || !errors.Is(globex, spine.ErrNotFound) {
		t.Fatalf("bob's scope: %v, another org's: %v", bob, globex)
	}
}
