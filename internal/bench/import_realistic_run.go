package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/importer"
)

// The corpus shapes `spine bench import` measures.
const (
	ShapeTiny      = "tiny"      // every format, copies of the fixtures: many tiny sessions
	ShapeRealistic = "realistic" // Claude Code and Codex history: ~1 MB sessions, subagents, prefix copies
)

// Shapes are every shape, in the order they run.
var Shapes = []string{ShapeTiny, ShapeRealistic}

// DefaultRealisticSize is the realistic corpus's bytes.
const DefaultRealisticSize = 64 << 20

// NoCodex as ImportConfig.RealisticCodex makes the realistic corpus Claude
// Code's only.
const NoCodex = -1

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
	// Node is the whole corpus imported through a fresh node, format by
	// format (Claude Code's files, then Codex's): the sums of PerFormat's.
	Node *ImportRealisticNode `json:"node,omitempty"`
	// PerFormat is each format's part: its own dry run and its part of
	// the node's import.
	PerFormat []ImportRealisticFormat `json:"perFormat"`
}

// ImportRealisticFormat is one format's part of the realistic corpus.
type ImportRealisticFormat struct {
	Format         apps.Format `json:"format"`
	Files          int         `json:"files"`
	Bytes          int64       `json:"bytes"`
	Sessions       int         `json:"sessions"` // as the import counts them
	Responses      int         `json:"responses"`
	Envelopes      int         `json:"envelopes"`
	EnvelopesPerMB float64     `json:"envelopesPerMB"`
	// DryRun is the import of this format's files alone.
	DryRun ImportRate           `json:"dryRun"`
	Node   *ImportRealisticNode `json:"node,omitempty"`
}

// ImportRealisticNode is the realistic corpus (or one format's part) end
// to end: published, every envelope committed by the recorder, every
// session ended and its router call written by the accounting projector.
// Ended and Calls are the format's app's.
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
	cfg.Logger.Info("bench import: writing the realistic corpus", "bytes", cfg.RealisticSize, "codex_percent", max(cfg.RealisticCodex, 0))
	c, err := rt.writeRealistic(root, cfg.RealisticSize, max(cfg.RealisticCodex, 0))
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
	for _, f := range c.PerFormat {
		cfg.Logger.Info("bench import: realistic dry run", "format", f.Format)
		sum, rate, err := importPass(ctx, f.paths, importer.Options{}, f.Bytes, res)
		if err != nil {
			return nil, err
		}
		r.PerFormat = append(r.PerFormat, ImportRealisticFormat{Format: f.Format, Files: f.Files, Bytes: f.Bytes,
			Sessions: sum.Sessions, Responses: sum.Responses, Envelopes: sum.Envelopes, DryRun: rate,
			EnvelopesPerMB: round(float64(sum.Envelopes) / (float64(f.Bytes) / 1e6))})
	}
	if cfg.NodeSize != NoNode {
		cfg.Logger.Info("bench import: realistic through a node", "bytes", c.Bytes)
		if r.Node, err = realisticNode(ctx, cfg, c, r.PerFormat, res); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// realisticNode imports the corpus through a fresh node, one format's
// files after the other's, each timed end to end until its sessions'
// router calls are written; the whole is their sums. Every session must
// have ended with its router call, each format's under its app.
func realisticNode(ctx context.Context, cfg ImportConfig, c RealisticCorpus, per []ImportRealisticFormat, res *ImportResult) (*ImportRealisticNode, error) {
	tb, err := startTestbed(ctx, Config{DatabaseURL: cfg.DatabaseURL, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer tb.close()
	all := &ImportRealisticNode{}
	var took, published, recorded time.Duration
	var sessions, lines, responses int
	for i, f := range c.PerFormat {
		resetPeak(res)
		sum, t, err := importCommitted(ctx, tb, f.paths)
		if err != nil {
			return nil, err
		}
		sessions += sum.Sessions
		if err := waitForCalls(ctx, tb, int64(sessions)); err != nil {
			return nil, err
		}
		d := time.Since(t.start)
		n := &ImportRealisticNode{PublishedSeconds: round(t.published.Sub(t.start).Seconds()),
			RecordedSeconds: round(t.recorded.Sub(t.start).Seconds()), Rate: rate(d, f.Bytes, int(sum.Lines), sum.Responses),
			Duplicates: sum.Duplicates, Refused: len(sum.Refused)}
		if n.Ended, n.Calls, err = endedAndCalls(ctx, tb, f.Format.App()); err != nil {
			return nil, err
		}
		if n.Ended != int64(sum.Sessions) || n.Calls != int64(sum.Sessions) {
			return nil, fmt.Errorf("realistic node: %s: %d sessions imported, %d ended, %d router calls",
				f.Format, sum.Sessions, n.Ended, n.Calls)
		}
		cfg.Logger.Info("bench import: realistic through a node", "format", f.Format, "seconds", n.Rate.Seconds)
		per[i].Node = n
		took, published, recorded = took+d, published+t.published.Sub(t.start), recorded+t.recorded.Sub(t.start)
		lines, responses = lines+int(sum.Lines), responses+sum.Responses
		all.Duplicates, all.Refused = all.Duplicates+n.Duplicates, all.Refused+n.Refused
		all.Ended, all.Calls = all.Ended+n.Ended, all.Calls+n.Calls
	}
	all.PublishedSeconds, all.RecordedSeconds = round(published.Seconds()), round(recorded.Seconds())
	all.Rate = rate(took, c.Bytes, lines, responses)
	for _, f := range per {
		all.Rate.PeakRSSBytes = max(all.Rate.PeakRSSBytes, f.Node.Rate.PeakRSSBytes)
	}
	return all, nil
}

// endedAndCalls counts app's sessions that have ended and its router calls.
func endedAndCalls(ctx context.Context, tb *testbed, app string) (ended, calls int64, err error) {
	err = tb.node.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sessions WHERE ended_at IS NOT NULL AND app = $1),
		(SELECT count(*) FROM router_calls WHERE app = $1)`, app).Scan(&ended, &calls)
	if err != nil {
		return 0, 0, fmt.Errorf("realistic node: %w", err)
	}
	return ended, calls, nil
}
