package bench

import (
	"math"
	"time"
)

// Result is what one ingest benchmark measured. It encodes as the JSON
// `spine bench ingest` prints.
type Result struct {
	Benchmark   string       `json:"benchmark"` // "ingest"
	Environment Environment  `json:"environment"`
	Parameters  Parameters   `json:"parameters"`
	Postgres    Postgres     `json:"postgres"`
	Scale       *Scale       `json:"scale"`
	Spine       Throughput   `json:"spine,omitzero"` // absent in a soak, as are raw, ratio and latency
	Raw         Throughput   `json:"raw,omitzero"`
	RawTuning   RawTuning    `json:"rawTuning,omitzero"` // how the raw path was tuned
	Ratio       float64      `json:"ratio,omitzero"`     // spine chunks/s ÷ raw chunks/s
	Latency     Latency      `json:"latency,omitzero"`
	Redaction   *Redaction   `json:"redaction,omitempty"` // absent in a soak
	Soak        *Soak        `json:"soak,omitempty"`      // with Config.Duration
	Verified    bool         `json:"verified"`
	Checks      Verification `json:"verification"`
	Memory      Memory       `json:"memory"`
	Seconds     float64      `json:"seconds"` // the whole run, setup included
}

// Environment is the machine and runtime the figures come from.
type Environment struct {
	GoVersion  string `json:"goVersion"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"numCpu"`
}

// Parameters echo the configuration after defaults.
type Parameters struct {
	Sessions       int     `json:"sessions"`
	Chunks         int     `json:"chunksPerSession"`
	Payload        int     `json:"payloadBytes"`
	Rate           int     `json:"rate"`
	LatencySeconds float64 `json:"latencySeconds"`
	Batch          int     `json:"batch"`
	Events         float64 `json:"events"`
	Instances      int     `json:"instances"`
	Cluster        bool    `json:"cluster"`
	Duration       float64 `json:"durationSeconds,omitzero"` // a soak's
	// DuplicateWindow is SPINE_SESSIONS's duplicate window during the run.
	DuplicateWindow float64 `json:"duplicateWindowSeconds"`
}

// Postgres says which server the run used and how it commits.
type Postgres struct {
	Source            string `json:"source"` // env, local or private
	Version           string `json:"version"`
	Fsync             string `json:"fsync"`
	SynchronousCommit string `json:"synchronousCommit"`
}

// Throughput is one path's burst: every message published as fast as the
// client allows, timed until the last one is committed in PostgreSQL.
type Throughput struct {
	Messages          int     `json:"messages"` // envelopes: starts, chunks and ends
	Chunks            int     `json:"chunks"`
	Bytes             int64   `json:"bytes"` // message payload bytes published
	PublishSeconds    float64 `json:"publishSeconds"`
	Seconds           float64 `json:"seconds"` // first publish → last commit
	Batches           int     `json:"batches"` // transactions committed
	ChunksPerSecond   float64 `json:"chunksPerSec"`
	MessagesPerSecond float64 `json:"messagesPerSec"`
	MBPerSecond       float64 `json:"mbPerSec"`
	// PhaseSeconds is where the recorder's loop spent the run, by phase
	// (streams.Phase): waiting for a batch, BEGIN and the checkpoint's lock
	// and move, the handler, dead letters, COMMIT, the ack. Spine's runs only.
	PhaseSeconds map[string]float64 `json:"phaseSeconds,omitempty"`
	// CPU is what the machine's processors did over the run, and
	// CoreMicrosPerChunk the machine's busy core time per chunk (every
	// process: this one, PostgreSQL, anything else running): on a run
	// that kept the cores busy, the cost that decides its throughput,
	// comparable between spine's run and raw's.
	CPU                CPU     `json:"cpu"`
	CoreMicrosPerChunk float64 `json:"coreMicrosPerChunk"`
}

// withCPU sets t's CPU figures from the run's CPU.
func (t Throughput) withCPU(c CPU) Throughput {
	t.CPU = c
	if t.Chunks > 0 {
		t.CoreMicrosPerChunk = round(c.MachineBusy * float64(c.Cores) * t.Seconds / float64(t.Chunks) * 1e6)
	}
	return t
}

func newThroughput(w counts, publish, total time.Duration, batches int) Throughput {
	s := total.Seconds()
	return Throughput{Messages: w.messages, Chunks: w.chunks, Bytes: w.bytes,
		PublishSeconds: round(publish.Seconds()), Seconds: round(s), Batches: batches,
		ChunksPerSecond: round(float64(w.chunks) / s), MessagesPerSecond: round(float64(w.messages) / s),
		MBPerSecond: round(float64(w.bytes) / s / 1e6)}
}

// Redaction is what redaction at the door costs, in the same run: spine's
// burst sent Rounds times with streams.Publisher redacting and Rounds
// times with Unredacted set, alternating; figures are medians.
type Redaction struct {
	Rounds                 int     `json:"rounds"`
	ChunksPerSec           float64 `json:"chunksPerSec"`           // redacting
	UnredactedChunksPerSec float64 `json:"unredactedChunksPerSec"` // redaction off
	Ratio                  float64 `json:"ratio"`                  // redacting ÷ raw
	RatioUnredacted        float64 `json:"ratioUnredacted"`        // redaction off ÷ raw
	// Cost is the share of chunks/s redaction takes: 1 − redacting ÷ off
	// (negative when noise outweighs it).
	Cost float64 `json:"cost"`
	// MicrosPerEnvelope is Envelope.Redacted alone over one burst, per
	// envelope, on one goroutine.
	MicrosPerEnvelope float64 `json:"microsPerEnvelope"`
}

// Latency is publish → committed for chunks offered at a fixed rate.
type Latency struct {
	OfferedRate  int     `json:"offeredRate"`
	AchievedRate float64 `json:"achievedRate"` // chunks published ÷ seconds spent publishing
	Seconds      float64 `json:"seconds"`
	Chunks       int     `json:"chunks"`
	P50Ms        float64 `json:"p50Ms"`
	P90Ms        float64 `json:"p90Ms"`
	P99Ms        float64 `json:"p99Ms"`
	MaxMs        float64 `json:"maxMs"`
	// Breakdown is where the time went (the ingest benchmark's phase).
	Breakdown *Breakdown `json:"breakdown,omitempty"`
}

// Verification counts the projections against what was sent.
type Verification struct {
	SessionsSent    int `json:"sessionsSent"`
	SessionsEnded   int `json:"sessionsEnded"`
	TextChunksSent  int `json:"textChunksSent"`
	ChunkRows       int `json:"chunkRows"` // session_chunks
	EventChunksSent int `json:"eventChunksSent"`
	StepRows        int `json:"stepRows"` // steps
	DeadLetters     int `json:"deadLetters"`
	RawRowsSent     int `json:"rawRowsSent"`
	RawRows         int `json:"rawRows"`
}

// ok reports whether every count matches.
func (v Verification) ok() bool {
	return v.SessionsEnded == v.SessionsSent && v.ChunkRows == v.TextChunksSent &&
		v.StepRows == v.EventChunksSent && v.DeadLetters == 0 && v.RawRows == v.RawRowsSent
}

// Memory is the process's resident set at the end of the run.
type Memory struct {
	RSSBytes     int64 `json:"rssBytes"`
	PeakRSSBytes int64 `json:"peakRssBytes"`
}

// round keeps three decimals: enough for milliseconds and ratios, and the
// JSON stays readable.
func round(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return math.Round(f*1000) / 1000
}
