package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"slices"
	"time"
)

// Run measures ingest: spine's burst, the raw baseline's burst, then the
// latency phase, then verification; or, with cfg.Duration, a soak and
// verification. A result that did not verify comes
// back without an error (check Verified); an error with a nil result means
// a phase could not finish, and an error with a result means only the
// cleanup failed.
func Run(ctx context.Context, cfg Config) (res *Result, err error) {
	began := time.Now()
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	log.Info("starting node and database")
	tb, err := startTestbed(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := tb.close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	res = &Result{Benchmark: "ingest", Environment: environment(), Parameters: parameters(cfg)}
	phases := measure
	if cfg.Duration > 0 {
		phases = measureSoak
	}
	if err := phases(ctx, tb, cfg, res); err != nil {
		return nil, err
	}
	res.Scale = tb.scale()
	res.Memory = memory()
	res.Seconds = round(time.Since(began).Seconds())
	return res, nil
}

// measure runs the phases on a started testbed and fills res.
func measure(ctx context.Context, tb *testbed, cfg Config, res *Result) (err error) {
	log := cfg.Logger
	if res.Postgres, err = postgres(ctx, tb.node.Pool, tb.db.source); err != nil {
		return err
	}
	w := newWorkload(randomHex(4), cfg.Payload, cfg.Events)
	b, err := newBurst(w.burst(cfg.Sessions, cfg.Chunks, time.Now()))
	if err != nil {
		return err
	}
	log.Info("spine burst", "messages", b.counts.messages)
	mark := tb.markBurst()
	if cfg.BurstProfile != nil {
		if err := pprof.StartCPUProfile(cfg.BurstProfile); err != nil {
			return fmt.Errorf("burst cpu profile: %w", err)
		}
	}
	res.Spine, err = runSpine(ctx, tb, b)
	if cfg.BurstProfile != nil {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	tb.burst = tb.burstSince(mark, res.Spine)
	log.Info("raw burst", "messages", b.counts.messages, "spine_chunks_per_sec", res.Spine.ChunksPerSecond)
	if res.Raw, res.RawTuning, err = runRaw(ctx, tb, b); err != nil {
		return err
	}
	res.Ratio = round(res.Spine.ChunksPerSecond / res.Raw.ChunksPerSecond)
	// Only the burst's counts are verified: nothing after this point holds
	// its envelopes and bytes, so the collector need not carry them through
	// the latency phase.
	burstCounts := b.counts
	unredacted, err := measureRedaction(ctx, tb, cfg, res)
	if err != nil {
		return err
	}
	log.Info("latency phase", "rate", cfg.Rate, "seconds", cfg.LatencyDuration.Seconds(),
		"raw_chunks_per_sec", res.Raw.ChunksPerSecond)
	var latSent counts
	if cfg.LatencyDuration > 0 {
		if res.Latency, latSent, err = runLatency(ctx, tb, w, cfg); err != nil {
			return err
		}
	}
	log.Info("verifying")
	if res.Checks, err = verify(ctx, tb.node.Pool, burstCounts.plus(unredacted).plus(latSent), burstCounts.chunks); err != nil {
		return err
	}
	res.Verified = res.Checks.ok()
	return nil
}

// redactionRounds is how many bursts measureRedaction sends each way.
const redactionRounds = 3

// measureRedaction sends redactionRounds bursts of the burst's shape with
// redaction at the door on and as many with it off
// (streams.Publisher.Unredacted), alternating which goes first (on off,
// off on, on off) so neither gains from a warmer process or loses to a
// fuller database, and fills res.Redaction with the medians. It returns
// what it sent, for verification.
func measureRedaction(ctx context.Context, tb *testbed, cfg Config, res *Result) (counts, error) {
	var sent counts
	var on, off []float64
	for i := range 2 * redactionRounds {
		redact := i%4 == 0 || i%4 == 3
		b, err := newBurst(newWorkload(randomHex(4), cfg.Payload, cfg.Events).burst(cfg.Sessions, cfg.Chunks, time.Now()))
		if err != nil {
			return counts{}, err
		}
		cfg.Logger.Info("spine burst", "redaction", redact, "messages", b.counts.messages)
		tb.setRedaction(redact)
		t, err := runSpine(ctx, tb, b)
		tb.setRedaction(true)
		if err != nil {
			return counts{}, err
		}
		if redact {
			on = append(on, t.ChunksPerSecond)
		} else {
			off = append(off, t.ChunksPerSecond)
		}
		sent = sent.plus(b.counts)
		if i == 0 {
			res.Redaction = &Redaction{Rounds: redactionRounds, MicrosPerEnvelope: redactMicros(b)}
		}
	}
	r := res.Redaction
	r.ChunksPerSec, r.UnredactedChunksPerSec = middle(on), middle(off)
	r.Ratio = round(r.ChunksPerSec / res.Raw.ChunksPerSecond)
	r.RatioUnredacted = round(r.UnredactedChunksPerSec / res.Raw.ChunksPerSecond)
	r.Cost = round(1 - r.ChunksPerSec/r.UnredactedChunksPerSec)
	return sent, nil
}

// redactMicros is what Envelope.Redacted alone takes per envelope of b, on
// one goroutine: the door's own work, apart from the noise of the
// end-to-end figures.
func redactMicros(b *burst) float64 {
	start := time.Now()
	for _, e := range b.envs {
		e.Redacted()
	}
	return round(float64(time.Since(start).Microseconds()) / float64(len(b.envs)))
}

func middle(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return round(s[len(s)/2])
}
