package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spinehq/spine/importer"
)

// The corpus shapes `spine bench import` measures.
const (
	ShapeTiny      = "tiny"      // every format, copies of the fixtures: many tiny sessions
	ShapeRealistic = "realistic" // Claude Code history: ~1 MB sessions, subagents, prefix copies
)

// Shapes are every shape, in the order they run.
var Shapes = []string{ShapeTiny, ShapeRealistic}

// DefaultRealisticSize is the realistic corpus's bytes.
const DefaultRealisticSize = 64 << 20

// ImportRealistic is the realistic corpus through the parsers, a raw
// baseline and a node.
type ImportRealistic struct {
	Corpus    RealisticCorpus `json:"corpus"`
	Lines     int             `json:"lines"`
	Sessions  int             `json:"sessions"` // as the import counts them: each once, however many files hold it
	Responses int             `json:"responses"`
	Envelopes int             `json:"envelopes"`
	// EnvelopesPerMB is what makes the shape: real history has about 40.
	EnvelopesPerMB float64    `json:"envelopesPerMB"`
	DryRun         ImportRate `json:"dryRun"`
	Raw            ImportRate `json:"raw"` // as ImportFormat.Raw, over every file
	Ratio          float64    `json:"ratio"`
	// Node is the whole corpus imported through a fresh node.
	Node *ImportRealisticNode `json:"node,omitempty"`
}

// ImportRealisticNode is the realistic corpus end to end: published, every
// envelope committed by the recorder, every session ended and its router
// call written by the accounting projector.
type ImportRealisticNode struct {
	PublishedSeconds float64 `json:"publishedSeconds"`
	RecordedSeconds  float64 `json:"recordedSeconds"` // until the recorder committed the last envelope
	// Rate runs until the last router call was written: the end to end figure.
	Rate       ImportRate `json:"rate"`
	Ended      int64      `json:"endedSessions"`
	Calls      int64      `json:"routerCalls"`
	Duplicates int        `json:"duplicates"`
	Refused    int        `json:"refused"`
}

// runRealistic writes the realistic corpus under dir and measures it.
func runRealistic(ctx context.Context, cfg ImportConfig, dir string, res *ImportResult) (*ImportRealistic, error) {
	rt, err := loadRealistic(cfg.FixturesDir)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "realistic")
	cfg.Logger.Info("bench import: writing the realistic corpus", "bytes", cfg.RealisticSize)
	c, err := rt.writeRealistic(root, cfg.RealisticSize)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	files, err := realisticFiles(root)
	if err != nil {
		return nil, err
	}
	r := &ImportRealistic{Corpus: c}
	cfg.Logger.Info("bench import: realistic raw baseline", "files", len(files))
	if r.Raw, err = rawPassFiles(files, c.Bytes, res); err != nil {
		return nil, err
	}
	cfg.Logger.Info("bench import: realistic dry run")
	sum, rate, err := importPass(ctx, []string{root}, importer.Options{}, c.Bytes, res)
	if err != nil {
		return nil, err
	}
	r.DryRun, r.Lines, r.Sessions, r.Responses, r.Envelopes = rate, int(sum.Lines), sum.Sessions, sum.Responses, sum.Envelopes
	r.EnvelopesPerMB = round(float64(sum.Envelopes) / (float64(c.Bytes) / 1e6))
	r.Ratio = round(rate.MBPerSec / r.Raw.MBPerSec)
	if cfg.NodeSize != NoNode {
		cfg.Logger.Info("bench import: realistic through a node", "bytes", c.Bytes)
		if r.Node, err = realisticNode(ctx, cfg, root, c.Bytes, res); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// realisticNode imports root through a fresh node and times it end to end.
func realisticNode(ctx context.Context, cfg ImportConfig, root string, size int64, res *ImportResult) (*ImportRealisticNode, error) {
	tb, err := startTestbed(ctx, Config{DatabaseURL: cfg.DatabaseURL, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer tb.close()
	resetPeak(res)
	sum, t, err := importCommitted(ctx, tb, []string{root})
	if err != nil {
		return nil, err
	}
	start := t.start
	n := &ImportRealisticNode{PublishedSeconds: round(t.published.Sub(start).Seconds()), Duplicates: sum.Duplicates,
		Refused: len(sum.Refused), RecordedSeconds: round(t.recorded.Sub(start).Seconds())}
	if err := waitForCalls(ctx, tb, int64(sum.Sessions)); err != nil {
		return nil, err
	}
	n.Rate = rate(time.Since(start), size, int(sum.Lines), sum.Responses)
	err = tb.node.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sessions WHERE ended_at IS NOT NULL),
		(SELECT count(*) FROM router_calls)`).Scan(&n.Ended, &n.Calls)
	if err != nil {
		return nil, fmt.Errorf("realistic node: %w", err)
	}
	return n, nil
}
