package recorder

import (
	"cmp"
	"context"
	"io"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/secrets"
	"github.com/spinehq/spine/streams"
)

// Config configures a Recorder.
type Config struct {
	// Blobs stores file contents and transcripts; nil means a PGStore.
	Blobs library.BlobStore
	// FileCap is the largest content stored with a step; 0 means
	// library.DefaultFileCap. Larger content is referenced by digest only.
	FileCap    int
	Logger     *slog.Logger          // nil: discard
	Registerer prometheus.Registerer // nil: metrics not registered
	// Partitions is how many partitions the sessions are split into
	// (SPINE_PARTITIONS); 0 or 1 means none. Partition is the one this
	// recorder projects.
	Partitions, Partition int
}

// Recorder projects the session stream. It is a streams.Handler.
type Recorder struct {
	blobs   library.BlobStore
	fileCap int
	parts   int
	part    int
	log     *slog.Logger
	m       *metrics
	// counted is the last Apply's envelopes by type and outcome, added to
	// spine_recorder_envelopes_total on commit (Committed): an Apply that
	// is rolled back, or an attempt isolation makes, counts nothing.
	counted map[[2]string]int
	live    *live // the running sessions' chunks (live.go)
}

var (
	_ streams.Handler   = (*Recorder)(nil)
	_ streams.Committer = (*Recorder)(nil)
	_ streams.Preparer  = (*Recorder)(nil)
)

// decoded is a message decoded, checked and redacted by Prepare.
type decoded struct {
	env *streams.Envelope
	err error
}

// Prepare implements streams.Preparer: decoding, the subject check and
// redaction need no transaction, so they run as the message is fetched.
func (r *Recorder) Prepare(m *streams.Message) {
	e, err := decode(*m)
	m.Prepared = decoded{e, err}
}

// New returns a Recorder.
func New(cfg Config) *Recorder {
	r := &Recorder{blobs: cfg.Blobs, fileCap: cmp.Or(cfg.FileCap, library.DefaultFileCap), log: cfg.Logger,
		m: newMetrics(cfg.Registerer), parts: max(cfg.Partitions, 1), part: cfg.Partition, live: newLive()}
	if r.blobs == nil {
		r.blobs = library.NewPGStore(nil)
	}
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return r
}

// Apply applies a batch of session-stream messages inside tx.
func (r *Recorder) Apply(ctx context.Context, tx pgx.Tx, msgs []streams.Message) ([]error, error) {
	r.counted = nil
	r.live.forget()
	counted := map[[2]string]int{}
	b := newBatch(r, tx)
	envs := make([]*streams.Envelope, len(msgs))
	results := make([]error, len(msgs))
	for i, m := range msgs {
		if d, ok := m.Prepared.(decoded); ok {
			envs[i], results[i] = d.env, d.err
		} else {
			envs[i], results[i] = decode(m)
		}
	}
	if err := b.preload(ctx, envs); err != nil {
		return nil, err
	}
	for i, e := range envs {
		if e == nil {
			counted[[2]string{"unknown", "dead_letter"}]++
			continue
		}
		res, err := b.apply(ctx, msgs[i], e)
		if err != nil {
			return nil, err
		}
		counted[[2]string{e.Type, outcome(res)}]++
		if res != errDuplicate {
			results[i] = b.attribute(e, res)
		}
	}
	if err := b.flush(ctx); err != nil {
		return nil, err
	}
	r.counted = counted
	return results, nil
}

// Committed implements streams.Committer: the last Apply's envelopes are
// counted once its transaction committed, and what it recorded of the
// running sessions' chunks is kept (live.go).
func (r *Recorder) Committed(uint64, []streams.Message) {
	r.live.committed()
	for k, n := range r.counted {
		r.m.envelopes.WithLabelValues(k[0], k[1]).Add(float64(n))
	}
	r.counted = nil
}

func outcome(res error) string {
	switch {
	case res == errDuplicate:
		return "duplicate"
	case res != nil:
		return "dead_letter"
	}
	return "applied"
}

func decode(m streams.Message) (*streams.Envelope, error) {
	e, err := streams.Decode(m.Data)
	if err != nil {
		return nil, err
	}
	if err := streams.CheckSubject(e, streams.OriginalSubject(m.Subject)); err != nil {
		return nil, err
	}
	// The door redacted what it published, and says with which rules; a
	// producer that wrote to NATS directly, or a rebuild of messages older
	// than a rule, did not, and is redacted here: once here covers every
	// field the recorder stores. Text the door redacted with these very
	// rules is not redacted again: a second pass would change nothing, and
	// on long tool outputs full of keywords it is most of the recorder's
	// time (docs/performance.md#import).
	if m.Header.Get(streams.HeaderRedacted) == secrets.Fingerprint() {
		return e, nil
	}
	return e.Redacted(), nil
}
