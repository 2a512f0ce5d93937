package bench

import (
	"context"
	"errors"
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
	if res.Spine, err = runSpine(ctx, tb, b); err != nil {
		return err
	}
	log.Info("raw burst", "messages", b.counts.messages, "spine_chunks_per_sec", res.Spine.ChunksPerSecond)
	if res.Raw, err = runRaw(ctx, tb, b, cfg.Batch); err != nil {
		return err
	}
	res.Ratio = round(res.Spine.ChunksPerSecond / res.Raw.ChunksPerSecond)
	log.Info("latency phase", "rate", cfg.Rate, "seconds", cfg.LatencyDuration.Seconds(),
		"raw_chunks_per_sec", res.Raw.ChunksPerSecond)
	var latSent counts
	if cfg.LatencyDuration > 0 {
		if res.Latency, latSent, err = runLatency(ctx, tb, w, cfg); err != nil {
			return err
		}
	}
	log.Info("verifying")
	if res.Checks, err = verify(ctx, tb.node.Pool, b.counts.plus(latSent), b.counts.chunks); err != nil {
		return err
	}
	res.Verified = res.Checks.ok()
	return nil
}
