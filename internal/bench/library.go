package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/migrations"
)

// Sizes and defaults of the Library benchmark.
const (
	SmallFileBytes    = 1 << 10 // 1 KiB: a source file a session writes
	LargeFileBytes    = 8 << 20 // 8 MiB: a long transcript or an upload
	DefaultSmallCount = 5000
	DefaultLargeCount = 8
	DefaultSmallBatch = 100
)

// ErrLibraryMismatch is returned by callers that treat an unverified
// Library result as a failure: bytes read back differed from what was
// stored, or two files meant to differ had the same digest.
var ErrLibraryMismatch = errors.New("bench: library bytes read back differ from what was stored")

// LibraryConfig says what one Library benchmark stores.
type LibraryConfig struct {
	// SmallCount is the number of 1 KiB files of each content kind; 0 means
	// 5000.
	SmallCount int
	// LargeCount is the number of 8 MiB files of each content kind; 0 means 8.
	LargeCount int
	// SmallBatch is how many small files one transaction puts (PutMany, as
	// the recorder does in its batch); 0 means 100.
	SmallBatch int
	// FixturesDir holds the real transcripts (*.jsonl, *.json) whose
	// stored/raw ratio is reported; "" means ../shared/fixtures beside the
	// directory holding go.mod above the working directory.
	FixturesDir string
	// DatabaseURL is a PostgreSQL whose user may CREATE DATABASE; "" means
	// the server `spine serve` would find.
	DatabaseURL string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

func (c LibraryConfig) withDefaults() (LibraryConfig, error) {
	c.SmallCount = cmp.Or(c.SmallCount, DefaultSmallCount)
	c.LargeCount = cmp.Or(c.LargeCount, DefaultLargeCount)
	c.SmallBatch = cmp.Or(c.SmallBatch, DefaultSmallBatch)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case c.SmallCount < 1:
		return c, fmt.Errorf("%w: small count %d, want 1 or more", ErrInvalidConfig, c.SmallCount)
	case c.LargeCount < 1:
		return c, fmt.Errorf("%w: large count %d, want 1 or more", ErrInvalidConfig, c.LargeCount)
	case c.SmallBatch < 1:
		return c, fmt.Errorf("%w: small batch %d, want 1 or more", ErrInvalidConfig, c.SmallBatch)
	}
	return c, nil
}

// LibraryResult is what one Library benchmark measured. It encodes as the
// JSON `spine bench library` prints.
type LibraryResult struct {
	Benchmark   string            `json:"benchmark"` // "library"
	Environment Environment       `json:"environment"`
	Parameters  LibraryParameters `json:"parameters"`
	Postgres    Postgres          `json:"postgres"`
	Small       SizeClass         `json:"small"`
	Large       SizeClass         `json:"large"`
	// Transcripts is nil when no fixtures were found; TranscriptsReason
	// then says why.
	Transcripts       *TranscriptRatio `json:"transcripts"`
	TranscriptsReason string           `json:"transcriptsReason,omitempty"`
	Verified          bool             `json:"verified"`
	// Analyzes counts the ANALYZEs run between batches, where autovacuum's
	// default rule would have run one (see Parameters.Analyze).
	Analyzes int     `json:"analyzes"`
	Memory   Memory  `json:"memory"`
	Seconds  float64 `json:"seconds"`
}

// LibraryParameters echo the configuration after defaults.
type LibraryParameters struct {
	SmallCount int    `json:"smallCount"`
	SmallBytes int    `json:"smallBytes"`
	SmallBatch int    `json:"smallBatch"`
	LargeCount int    `json:"largeCount"`
	LargeBytes int    `json:"largeBytes"`
	PieceBytes int    `json:"pieceBytes"`
	Zstd       string `json:"zstd"`
	Raw        string `json:"raw"`
	Store      string `json:"store"`
	Analyze    string `json:"analyze"`
}

// SizeClass holds the figures for files of one size, for both kinds of
// content.
type SizeClass struct {
	Text   Variant `json:"text"`
	Random Variant `json:"random"`
}

// Variant is one size and kind of content through the store and through
// the raw baseline, timed file by file (or batch by batch) in turn so both
// see the same machine.
type Variant struct {
	Content string `json:"content"`
	Files   int    `json:"files"`
	Bytes   int64  `json:"bytes"` // raw bytes of all files
	Store   Rates  `json:"store"`
	Raw     Rates  `json:"raw"`
	// PutRatio and GetRatio are the store's MB/s over the raw baseline's:
	// the share of the raw speed the store keeps.
	PutRatio float64 `json:"putRatio"`
	GetRatio float64 `json:"getRatio"`
	// Dedup is putting every file a second time: nothing new is stored.
	Dedup Rate `json:"dedupPut"`
	// StoredBytes is the pieces' data as stored (zstd or raw);
	// OnDiskBytes is what PostgreSQL keeps for it (pg_column_size, after
	// its own TOAST compression).
	StoredBytes int64   `json:"storedBytes"`
	OnDiskBytes int64   `json:"onDiskBytes"`
	StoredRatio float64 `json:"storedRatio"` // storedBytes ÷ bytes
	Check       Check   `json:"verification"`
}

// Rates are put and get speeds in MB/s (10⁶ bytes) of raw content.
type Rates struct {
	Put Rate `json:"put"`
	Get Rate `json:"get"`
}

// Rate is bytes moved in a time.
type Rate struct {
	Seconds     float64 `json:"seconds"`
	MBPerSecond float64 `json:"mbPerSec"`
}

func newRate(bytes int64, d time.Duration) Rate {
	return Rate{Seconds: round(d.Seconds()), MBPerSecond: round(float64(bytes) / d.Seconds() / 1e6)}
}

// Check counts what was verified: every file read back byte-identical
// through the store and through the raw baseline, and every file's digest
// distinct (no file was deduplicated against another).
type Check struct {
	Files           int `json:"files"`
	DistinctDigests int `json:"distinctDigests"`
	StoreRoundTrips int `json:"storeRoundTrips"`
	RawRoundTrips   int `json:"rawRoundTrips"`
	Stored          int `json:"storedFiles"` // library_files rows for these digests
}

func (c Check) ok() bool {
	return c.DistinctDigests == c.Files && c.StoreRoundTrips == c.Files && c.RawRoundTrips == c.Files &&
		c.Stored == c.Files
}

// TranscriptRatio is the stored/raw size of the real transcripts.
type TranscriptRatio struct {
	Dir           string  `json:"dir"`
	Files         int     `json:"files"`
	DistinctFiles int     `json:"distinctFiles"`
	Bytes         int64   `json:"bytes"` // raw bytes of the distinct files
	StoredBytes   int64   `json:"storedBytes"`
	OnDiskBytes   int64   `json:"onDiskBytes"`
	StoredRatio   float64 `json:"storedRatio"`
	RoundTrips    int     `json:"roundTrips"`
}

// RunLibrary measures the Library's PostgreSQL store on a fresh database:
// small files put in transactions and read back, large files streamed in
// and out, each beside BLAKE3 + zstd of the same bytes in memory, then the
// stored size of the real transcripts. A result that did not verify comes
// back without an error (check Verified); an error with a result means
// only the cleanup failed.
func RunLibrary(ctx context.Context, cfg LibraryConfig) (res *LibraryResult, err error) {
	began := time.Now()
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	log.Info("creating database")
	bed, err := startLibraryBed(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := bed.close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	res = &LibraryResult{Benchmark: "library", Environment: environment(), Parameters: LibraryParameters{
		SmallCount: cfg.SmallCount, SmallBytes: SmallFileBytes, SmallBatch: cfg.SmallBatch,
		LargeCount: cfg.LargeCount, LargeBytes: LargeFileBytes, PieceBytes: library.PieceSize,
		Zstd:  "klauspost/compress zstd SpeedDefault, one piece at a time",
		Raw:   "in memory: put = BLAKE3-256 of the file + zstd of each piece; get = zstd decode + BLAKE3-256",
		Store: "library.PGStore: small = NewBlob + PutMany per transaction, Get per file; large = Put streamed, ReadRange streamed",
		Analyze: "ANALYZE library_files, library_pieces between batches, untimed, whenever autovacuum's default rule " +
			"(50 rows + 10% changed) would: the figures are a running node's, not a never-analyzed table's",
	}}
	if res.Postgres, err = postgres(ctx, bed.pool, bed.db.source); err != nil {
		return nil, err
	}
	m := &libraryMeasure{pool: bed.pool, store: library.NewPGStore(nil), raw: newRawCodec(), log: log}
	defer m.raw.close()
	corpus, corpusDesc := textCorpus(cfg.FixturesDir)
	if res.Small, err = m.class(ctx, cfg.SmallCount, SmallFileBytes, cfg.SmallBatch, corpus, corpusDesc); err != nil {
		return nil, err
	}
	if res.Large, err = m.class(ctx, cfg.LargeCount, LargeFileBytes, 0, corpus, corpusDesc); err != nil {
		return nil, err
	}
	log.Info("transcripts")
	if res.Transcripts, res.TranscriptsReason, err = m.transcripts(ctx, cfg.FixturesDir); err != nil {
		return nil, err
	}
	res.Verified = res.Small.Text.Check.ok() && res.Small.Random.Check.ok() &&
		res.Large.Text.Check.ok() && res.Large.Random.Check.ok() &&
		(res.Transcripts == nil || res.Transcripts.RoundTrips == res.Transcripts.DistinctFiles)
	res.Analyzes = m.analyzes
	res.Memory = memory()
	res.Seconds = round(time.Since(began).Seconds())
	return res, nil
}

// libraryBed is a fresh migrated database and a pool on it, in a data
// directory of its own (for a private cluster, if one must be started).
type libraryBed struct {
	dir  string
	db   *database
	pool *pgxpool.Pool
}

func startLibraryBed(ctx context.Context, cfg LibraryConfig) (bed *libraryBed, err error) {
	bed = &libraryBed{}
	defer func() {
		if err != nil {
			err = errors.Join(err, bed.close())
		}
	}()
	if bed.dir, err = os.MkdirTemp("", "spine-bench-library-"); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	// A private cluster runs as the postgres user when we are root.
	if err := os.Chmod(bed.dir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if bed.db, err = createDatabase(ctx, cfg.DatabaseURL, bed.dir, cfg.Logger); err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, bed.db.url)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	_, err = migrations.Up(ctx, conn)
	conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if bed.pool, err = pgxpool.New(ctx, bed.db.url); err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return bed, nil
}

func (bed *libraryBed) close() error {
	if bed.pool != nil {
		bed.pool.Close()
	}
	var err error
	if bed.db != nil {
		err = bed.db.drop()
	}
	if bed.dir != "" {
		err = errors.Join(err, os.RemoveAll(bed.dir))
	}
	return err
}
