package bench_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/bench"
)

// TestLibrary runs a tiny Library benchmark and checks only what must hold
// on any machine: every file read back byte-identical through the store and
// through the baseline, no two files deduplicated, sane ratios. It never
// compares wall-clock figures with thresholds.
func TestLibrary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// 30 small files in batches of 7: the last batch is short.
	res, err := bench.RunLibrary(ctx, bench.LibraryConfig{SmallCount: 30, LargeCount: 1, SmallBatch: 7})
	if err != nil {
		t.Fatalf("RunLibrary: %v", err)
	}
	if !res.Verified {
		t.Fatalf("not verified: %+v", res)
	}
	checkVariant(t, "small text", res.Small.Text, 30, bench.SmallFileBytes)
	checkVariant(t, "small random", res.Small.Random, 30, bench.SmallFileBytes)
	checkVariant(t, "large text", res.Large.Text, 1, bench.LargeFileBytes)
	checkVariant(t, "large random", res.Large.Random, 1, bench.LargeFileBytes)
	for name, v := range map[string]bench.Variant{"small text": res.Small.Text, "large text": res.Large.Text} {
		if v.StoredRatio >= 1 {
			t.Errorf("%s: stored ratio %g, want text compressed below 1", name, v.StoredRatio)
		}
	}
	for name, v := range map[string]bench.Variant{"small random": res.Small.Random, "large random": res.Large.Random} {
		if v.StoredRatio != 1 {
			t.Errorf("%s: stored ratio %g, want 1 (random bytes stored raw)", name, v.StoredRatio)
		}
	}
	// The repository's fixtures sit beside it in this project; elsewhere
	// the result must say why there are none.
	tr := res.Transcripts
	if tr == nil {
		if res.TranscriptsReason == "" {
			t.Fatalf("no transcripts and no reason")
		}
		t.Logf("no transcripts: %s", res.TranscriptsReason)
		return
	}
	if tr.Files < 1 || tr.DistinctFiles < 1 || tr.DistinctFiles > tr.Files || tr.RoundTrips != tr.DistinctFiles {
		t.Errorf("transcripts: %+v", *tr)
	}
	if tr.StoredRatio <= 0 || tr.StoredRatio > 1 || tr.Bytes <= 0 {
		t.Errorf("transcripts: ratio %g of %d bytes, want 0 < ratio ≤ 1", tr.StoredRatio, tr.Bytes)
	}
}

func checkVariant(t *testing.T, name string, v bench.Variant, files, size int) {
	t.Helper()
	c := v.Check
	if v.Files != files || v.Bytes != int64(files*size) || c.Files != files {
		t.Errorf("%s: %d files of %d bytes, want %d of %d", name, v.Files, v.Bytes, files, files*size)
	}
	if c.DistinctDigests != files || c.StoreRoundTrips != files || c.RawRoundTrips != files || c.Stored != files {
		t.Errorf("%s: verification %+v", name, c)
	}
	if v.PutRatio <= 0 || v.GetRatio <= 0 || v.StoredRatio <= 0 || v.StoredBytes <= 0 || v.OnDiskBytes <= 0 {
		t.Errorf("%s: ratios %+v", name, v)
	}
	for _, r := range []bench.Rate{v.Store.Put, v.Store.Get, v.Raw.Put, v.Raw.Get, v.Dedup} {
		if r.MBPerSecond <= 0 {
			t.Errorf("%s: rate %+v, want > 0", name, r)
		}
	}
	if v.Content == "" {
		t.Errorf("%s: content not described", name)
	}
}

// TestLibraryWithoutFixtures: no transcripts is a null with a reason, and
// text content is generated instead.
func TestLibraryWithoutFixtures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := bench.RunLibrary(ctx, bench.LibraryConfig{SmallCount: 3, LargeCount: 1, FixturesDir: t.TempDir()})
	if err != nil {
		t.Fatalf("RunLibrary: %v", err)
	}
	if !res.Verified || res.Transcripts != nil || !strings.Contains(res.TranscriptsReason, "no *.jsonl or *.json") {
		t.Fatalf("verified %v, transcripts %+v, reason %q", res.Verified, res.Transcripts, res.TranscriptsReason)
	}
	if !strings.Contains(res.Small.Text.Content, "generated") {
		t.Errorf("text content %q, want generated lines", res.Small.Text.Content)
	}
	checkVariant(t, "small text", res.Small.Text, 3, bench.SmallFileBytes)
}

func TestLibraryConfigRejectsNonsense(t *testing.T) {
	for _, cfg := range []bench.LibraryConfig{{SmallCount: -1}, {LargeCount: -2}, {SmallBatch: -1}} {
		if _, err := bench.RunLibrary(context.Background(), cfg); !errors.Is(err, bench.ErrInvalidConfig) {
			t.Errorf("RunLibrary(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}
