package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/importer"
	"github.com/spinehq/spine/streams"
)

// Import defaults: bytes per format for the dry run and for the node.
const (
	DefaultImportSize     = 200 << 20
	DefaultImportNodeSize = 8 << 20
)

// ImportConfig configures `spine bench import`.
type ImportConfig struct {
	// FixturesDir holds the fixture folders whose line shapes the corpus
	// copies; "" finds ../shared/fixtures beside the module root.
	FixturesDir string
	// Dir keeps the generated files; "" uses a temporary directory,
	// removed at the end.
	Dir string
	// Shapes are the corpus shapes measured (ShapeTiny, ShapeRealistic);
	// nil means Shapes, both.
	Shapes []string
	// Formats to measure in the tiny shape; nil means every format.
	Formats []apps.Format
	// Size is each format's file for the dry run and the raw baseline;
	// 0 means DefaultImportSize.
	Size int64
	// NodeSize is each format's file imported through a real node; 0 means
	// DefaultImportNodeSize, NoNode skips the node (in both shapes).
	NodeSize int64
	// RealisticSize is the realistic corpus, for its dry run, its raw
	// baseline and its node; 0 means DefaultRealisticSize.
	RealisticSize int64
	// RealisticCodex is the percent of the realistic corpus's sessions
	// written as Codex rollouts; 0 means DefaultRealisticCodex, NoCodex
	// none (Claude Code history only).
	RealisticCodex int
	// Ccusage is the ccusage binary timed beside spine's reports; ""
	// finds it (see findCcusage), and without one its figures are null.
	Ccusage string
	// ReportRuns is how many times each report is timed; 0 means
	// DefaultReportRuns.
	ReportRuns  int
	DatabaseURL string       // as Config.DatabaseURL
	Logger      *slog.Logger // nil discards progress
}

// NoNode as ImportConfig.NodeSize skips the end-to-end phase.
const NoNode = -1

// ImportResult is what `spine bench import` prints.
type ImportResult struct {
	Benchmark   string      `json:"benchmark"` // "import"
	Environment Environment `json:"environment"`
	Shapes      []string    `json:"shapes"`
	// Formats and Node are the tiny shape's: many tiny sessions per format.
	Formats []ImportFormat `json:"formats"`
	// Node is every format's smaller file imported through a real node
	// (JetStream, recorder, PostgreSQL), timed until the recorder has
	// committed the last envelope.
	Node *ImportNode `json:"node,omitempty"`
	// Realistic is the realistic shape: Claude Code and Codex history of
	// ~1 MB sessions, Claude's with subagents and prefix copies.
	Realistic *ImportRealistic `json:"realistic,omitempty"`
	// PeakRSSScope says what the peak figures cover: "phase" when the
	// kernel's high-water mark was reset before each phase
	// (/proc/self/clear_refs), else "process".
	PeakRSSScope string  `json:"peakRssScope"`
	Seconds      float64 `json:"seconds"`
}

// ImportFormat is one format's corpus through the parsers and through a
// raw baseline of the same file.
type ImportFormat struct {
	Format    apps.Format `json:"format"`
	Bytes     int64       `json:"bytes"`
	Lines     int         `json:"lines"`
	Copies    int         `json:"copies"` // copies of the fixtures' lines, each with fresh ids
	Sessions  int         `json:"sessions"`
	Responses int         `json:"responses"`
	Envelopes int         `json:"envelopes"`
	Skipped   int         `json:"skipped"`
	// DryRun is `spine import --dry-run`: read, parse, build and validate
	// every envelope, publish nothing.
	DryRun ImportRate `json:"dryRun"`
	// Raw is bufio.Scanner + json.Unmarshal into map[string]any per line.
	Raw ImportRate `json:"raw"`
	// Ratio is the dry run's MB/s over raw's.
	Ratio float64 `json:"ratio"`
}

// ImportRate is one pass over a file.
type ImportRate struct {
	Seconds      float64 `json:"seconds"`
	LinesPerSec  float64 `json:"linesPerSecond"`
	MBPerSec     float64 `json:"mbPerSecond"`
	ResponsesSec float64 `json:"responsesPerSecond,omitempty"`
	PeakRSSBytes int64   `json:"peakRssBytes"`
}

// ImportNodeFormat is one format's file through the node.
type ImportNodeFormat struct {
	Format           apps.Format `json:"format"`
	Bytes            int64       `json:"bytes"`
	Sessions         int         `json:"sessions"`
	Responses        int         `json:"responses"`
	Envelopes        int         `json:"envelopes"`
	PublishedSeconds float64     `json:"publishedSeconds"`
	Rate             ImportRate  `json:"rate"`
}

// ImportNode is the end-to-end phase.
type ImportNode struct {
	Bytes     int64 `json:"bytes"`
	Sessions  int   `json:"sessions"`
	Responses int   `json:"responses"`
	Envelopes int   `json:"envelopes"`
	Duplicate int   `json:"duplicates"`
	Refused   int   `json:"refused"`
	Recorded  int64 `json:"recordedSessions"` // sessions rows in PostgreSQL afterwards
	// PublishedSeconds is the import itself: every envelope published and
	// acknowledged by JetStream; Rate runs on until the recorder has
	// committed the last one.
	PublishedSeconds float64    `json:"publishedSeconds"`
	Rate             ImportRate `json:"rate"`
	// PerFormat is each format's file imported on its own, one after the
	// other (the figures above are their sums): formats differ most in how
	// many sessions a megabyte holds.
	PerFormat []ImportNodeFormat `json:"perFormat"`
	// Reports are cost reports from the node's projections afterwards,
	// beside ccusage's on the same files.
	Reports *ImportReports `json:"reports"`
}

func (c ImportConfig) withDefaults() (ImportConfig, error) {
	c.Size = cmp.Or(c.Size, DefaultImportSize)
	c.NodeSize = cmp.Or(c.NodeSize, DefaultImportNodeSize)
	c.ReportRuns = cmp.Or(c.ReportRuns, DefaultReportRuns)
	c.RealisticSize = cmp.Or(c.RealisticSize, DefaultRealisticSize)
	c.RealisticCodex = cmp.Or(c.RealisticCodex, DefaultRealisticCodex)
	if len(c.Shapes) == 0 {
		c.Shapes = Shapes
	}
	for _, sh := range c.Shapes {
		if !slices.Contains(Shapes, sh) {
			return c, fmt.Errorf("bench import: no shape %q (shapes: %v)", sh, Shapes)
		}
	}
	if len(c.Formats) == 0 {
		c.Formats = apps.Formats
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.FixturesDir == "" {
		wd, _ := os.Getwd()
		root, ok := moduleRoot(wd)
		if !ok {
			return c, errors.New("bench import: no go.mod above the working directory; give the fixtures directory")
		}
		c.FixturesDir = root + "/../shared/fixtures"
	}
	if c.RealisticCodex > 100 || c.RealisticCodex < 1 && c.RealisticCodex != NoCodex {
		return c, fmt.Errorf("bench import: the realistic corpus's Codex share is a percent (0 to 100), not %d", c.RealisticCodex)
	}
	if c.Size < 1 || c.NodeSize < 1 && c.NodeSize != NoNode || c.ReportRuns < 1 || c.RealisticSize < 1 {
		return c, fmt.Errorf("bench import: sizes and report runs must be positive (size %d, node size %d, runs %d)",
			c.Size, c.NodeSize, c.ReportRuns)
	}
	return c, nil
}

// RunImport generates each format's corpus, times the dry run and the raw
// baseline on it, then imports the smaller files through a fresh node.
func RunImport(ctx context.Context, cfg ImportConfig) (res *ImportResult, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "spine-bench-import-"); err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	}
	res = &ImportResult{Benchmark: "import", Environment: environment(), PeakRSSScope: "phase", Shapes: cfg.Shapes}
	if slices.Contains(cfg.Shapes, ShapeTiny) {
		if err := runTiny(ctx, cfg, dir, res); err != nil {
			return nil, err
		}
	}
	if slices.Contains(cfg.Shapes, ShapeRealistic) {
		if res.Realistic, err = runRealistic(ctx, cfg, dir, res); err != nil {
			return nil, err
		}
	}
	res.Seconds = round(time.Since(start).Seconds())
	return res, nil
}

// runTiny measures the tiny shape: each format's corpus through the dry
// run and the raw baseline, then the smaller files through a node.
func runTiny(ctx context.Context, cfg ImportConfig, dir string, res *ImportResult) error {
	var nodeFiles []string
	var nodeFormats []apps.Format
	for _, f := range cfg.Formats {
		ct, err := loadTemplate(cfg.FixturesDir, f)
		if err != nil {
			return err
		}
		path := corpusName(dir, f, "large")
		cfg.Logger.Info("bench import: writing corpus", "format", f, "bytes", cfg.Size)
		copies, lines, size, err := ct.writeCorpus(path, cfg.Size)
		if err != nil {
			return err
		}
		r := ImportFormat{Format: f, Bytes: size, Lines: lines, Copies: copies}
		cfg.Logger.Info("bench import: raw baseline", "format", f)
		if r.Raw, err = rawPass(path, size, res); err != nil {
			return err
		}
		cfg.Logger.Info("bench import: dry run", "format", f)
		sum, rate, err := importPass(ctx, []string{path}, importer.Options{Format: f}, size, res)
		if err != nil {
			return err
		}
		r.DryRun, r.Sessions, r.Responses, r.Envelopes, r.Skipped = rate, sum.Sessions, sum.Responses, sum.Envelopes, sum.SkippedTotal
		r.Ratio = round(rate.MBPerSec / r.Raw.MBPerSec)
		res.Formats = append(res.Formats, r)
		if err := os.Remove(path); err != nil {
			return err
		}
		if cfg.NodeSize != NoNode {
			small := corpusName(dir, f, "node")
			if _, _, _, err := ct.writeCorpus(small, cfg.NodeSize); err != nil {
				return err
			}
			nodeFiles, nodeFormats = append(nodeFiles, small), append(nodeFormats, f)
		}
	}
	if len(nodeFiles) > 0 {
		cfg.Logger.Info("bench import: through a node", "files", len(nodeFiles))
		var err error
		if res.Node, err = nodePass(ctx, cfg, nodeFiles, nodeFormats, res); err != nil {
			return err
		}
	}
	return nil
}

// rawPass is the baseline: every line scanned and decoded into a map.
func rawPass(path string, size int64, res *ImportResult) (ImportRate, error) {
	return rawPassFiles([]string{path}, size, res)
}

// rawPassFiles is rawPass over files, one after the other.
func rawPassFiles(paths []string, size int64, res *ImportResult) (ImportRate, error) {
	resetPeak(res)
	start := time.Now()
	lines := 0
	buf := make([]byte, 1<<20)
	for _, path := range paths {
		n, err := rawScan(path, buf)
		if err != nil {
			return ImportRate{}, err
		}
		lines += n
	}
	return rate(time.Since(start), size, lines, 0), nil
}

// rawScan decodes each line of one file into a map and counts them.
func rawScan(path string, buf []byte) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(buf, apps.MaxLineBytes)
	lines := 0
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return 0, fmt.Errorf("raw baseline: %s:%d: %w", path, lines+1, err)
		}
		lines++
	}
	return lines, sc.Err()
}

// importPass runs the importer on paths and times it.
func importPass(ctx context.Context, paths []string, opts importer.Options, size int64, res *ImportResult) (*importer.Summary, ImportRate, error) {
	resetPeak(res)
	start := time.Now()
	sum, err := importer.Import(ctx, paths, opts)
	if err != nil {
		return nil, ImportRate{}, err
	}
	return sum, rate(time.Since(start), size, int(sum.Lines), sum.Responses), nil
}

// nodePass imports each file through a fresh node's JetStream (the path of
// `spine import --nats`), one after the other, each timed until the
// recorder has committed all of it.
func nodePass(ctx context.Context, cfg ImportConfig, files []string, formats []apps.Format, res *ImportResult) (*ImportNode, error) {
	tb, err := startTestbed(ctx, Config{DatabaseURL: cfg.DatabaseURL, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer tb.close()
	n := &ImportNode{}
	var lines int
	var published, took time.Duration
	resetPeak(res)
	for i, file := range files {
		fi, err := os.Stat(file)
		if err != nil {
			return nil, err
		}
		sum, t, err := importCommitted(ctx, tb, []string{file})
		if err != nil {
			return nil, err
		}
		pub, d := t.published.Sub(t.start), t.recorded.Sub(t.start)
		n.PerFormat = append(n.PerFormat, ImportNodeFormat{Format: formats[i], Bytes: fi.Size(), Sessions: sum.Sessions,
			Responses: sum.Responses, Envelopes: sum.Envelopes, PublishedSeconds: round(pub.Seconds()),
			Rate: rate(d, fi.Size(), int(sum.Lines), sum.Responses)})
		cfg.Logger.Info("bench import: through a node", "format", formats[i], "seconds", round(d.Seconds()))
		n.Bytes, n.Sessions, n.Responses, n.Envelopes = n.Bytes+fi.Size(), n.Sessions+sum.Sessions,
			n.Responses+sum.Responses, n.Envelopes+sum.Envelopes
		n.Duplicate, n.Refused = n.Duplicate+sum.Duplicates, n.Refused+len(sum.Refused)
		lines, published, took = lines+int(sum.Lines), published+pub, took+d
	}
	n.PublishedSeconds, n.Rate = round(published.Seconds()), rate(took, n.Bytes, lines, n.Responses)
	if err := tb.node.Pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE ended_at IS NOT NULL`).Scan(&n.Recorded); err != nil {
		return nil, err
	}
	cfg.Logger.Info("bench import: cost reports", "sessions", n.Recorded)
	n.Reports, err = reports(ctx, cfg, tb, n.Recorded, files)
	return n, err
}

// importTimes is when an import through a node started, was published
// (JetStream acked its last envelope) and was recorded (the recorder
// committed it).
type importTimes struct{ start, published, recorded time.Time }

// importCommitted imports paths through tb's JetStream (the path of
// `spine import --nats`) and waits until the recorder has committed all of
// it.
func importCommitted(ctx context.Context, tb *testbed, paths []string) (*importer.Summary, importTimes, error) {
	var t importTimes
	st, err := tb.node.JS.Stream(ctx, streams.StreamSessions)
	if err != nil {
		return nil, t, err
	}
	sink, err := importer.NewJetStreamSink(ctx, tb.node.JS)
	if err != nil {
		return nil, t, err
	}
	t.start = time.Now()
	sum, err := importer.Import(ctx, paths, importer.Options{Sink: sink})
	if err != nil {
		return nil, t, err
	}
	t.published = time.Now()
	info, err := st.Info(ctx)
	if err != nil {
		return nil, t, err
	}
	if _, err := tb.commits.waitFor(ctx, info.State.LastSeq); err != nil {
		return nil, t, err
	}
	t.recorded = time.Now()
	return sum, t, nil
}

func rate(d time.Duration, size int64, lines, responses int) ImportRate {
	s := d.Seconds()
	r := ImportRate{Seconds: round(s), LinesPerSec: round(float64(lines) / s), MBPerSec: round(float64(size) / 1e6 / s),
		PeakRSSBytes: memory().PeakRSSBytes}
	if responses > 0 {
		r.ResponsesSec = round(float64(responses) / s)
	}
	return r
}

// resetPeak resets the kernel's resident high-water mark, so the next
// VmHWM is the coming phase's own; where it cannot, the figures are the
// process's peak so far.
func resetPeak(res *ImportResult) {
	debug.FreeOSMemory() // the last phase's garbage is not this one's peak
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		res.PeakRSSScope = "process"
	}
}
