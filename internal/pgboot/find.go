package pgboot

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// Defaults for Options' zero values.
const (
	DefaultDatabase  = "spine"
	DefaultDataDir   = "data"
	DefaultLocalAddr = "127.0.0.1:5432"
)

// pingTimeout bounds each attempt to reach a server that should already run.
const pingTimeout = 5 * time.Second

// Options says where to look for PostgreSQL.
type Options struct {
	// URL is an explicit server (SPINE_DATABASE_URL). When set it is used
	// as-is, Database is ignored, and nothing else is tried.
	URL string
	// DataDir holds a private cluster in DataDir/pg and its log in
	// DataDir/pg.log. "" = DefaultDataDir ("data", relative to the working
	// directory).
	DataDir string
	// Database is the database to use, created if missing, on a discovered
	// or private server. "" = DefaultDatabase ("spine").
	Database string
	// Logger receives progress messages. nil = discard.
	Logger *slog.Logger
	// LocalAddr is where a local server is looked for. "" = DefaultLocalAddr.
	LocalAddr string
	// BinDirs, when non-nil, are the only directories searched for initdb and
	// pg_ctl (an empty slice finds none). nil = PATH, then
	// /usr/lib/postgresql/*/bin, newest version first.
	BinDirs []string
}

// Result is the PostgreSQL Find settled on.
type Result struct {
	// URL reaches Options.Database (or is Options.URL, untouched).
	URL string
	// Source is "env", "local" or "private".
	Source string
	// Stop stops a private cluster; it does nothing for other sources. It is
	// safe to call more than once.
	Stop func() error
}

// Find returns a reachable PostgreSQL: the explicit URL, else a local server,
// else a private cluster it starts. See the package documentation.
func Find(ctx context.Context, opts Options) (*Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if opts.URL != "" {
		return findEnv(ctx, opts)
	}
	res, localWhy := findLocal(ctx, opts)
	if res != nil {
		return res, nil
	}
	return findPrivate(ctx, opts, localWhy)
}

func (o Options) withDefaults() (Options, error) {
	o.Database = cmp.Or(o.Database, DefaultDatabase)
	o.LocalAddr = cmp.Or(o.LocalAddr, DefaultLocalAddr)
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dir, err := filepath.Abs(cmp.Or(o.DataDir, DefaultDataDir))
	if err != nil {
		return o, fmt.Errorf("resolve data dir: %w", err)
	}
	o.DataDir = dir
	return o, nil
}

func findEnv(ctx context.Context, opts Options) (*Result, error) {
	if err := ping(ctx, opts.URL); err != nil {
		return nil, fmt.Errorf("SPINE_DATABASE_URL is unreachable: %w", err)
	}
	opts.Logger.Info("pgboot: using SPINE_DATABASE_URL", "source", "env")
	return &Result{URL: opts.URL, Source: "env", Stop: noStop}, nil
}

func ping(ctx context.Context, url string) error {
	conn, err := connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// connect opens a connection, giving up after pingTimeout.
func connect(ctx context.Context, url string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	return pgx.Connect(ctx, url)
}

func noStop() error { return nil }
