package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/spinehq/spine/streams"
)

// otlpBed is an OTLP run's node, token and workload templates.
type otlpBed struct {
	tb          *testbed
	cfg         OTLPConfig
	tmpl        *otlpTemplates
	run         string
	base, token string
	phases      []string // the encodings sent, in order
}

// otlpContentTypes are each encoding's Content-Type.
var otlpContentTypes = map[string]string{otlpProtobuf: "application/x-protobuf", otlpJSON: "application/json"}

// otlpLogs is the door the phases post to.
const otlpLogs = "/otlp/v1/logs"

// workload is a phase's sessions, with ids of their own.
func (ob *otlpBed) workload(phase string) *otlpWorkload {
	return &otlpWorkload{t: ob.tmpl, run: ob.run, phase: phase, sessions: ob.cfg.Sessions, events: ob.cfg.Events,
		perRequest: ob.cfg.PerRequest, start: time.Now().Add(-time.Minute)}
}

// phase posts one encoding's sessions to the door and times them.
func (ob *otlpBed) phase(ctx context.Context, encoding string) (OTLPPhase, error) {
	bodies, err := otlpBodies(ob.workload(encoding).requests(), encoding)
	if err != nil {
		return OTLPPhase{}, err
	}
	ct := otlpContentTypes[encoding]
	ph := OTLPPhase{Door: "POST " + otlpLogs + " (" + ct + ")", Requests: len(bodies), Events: ob.cfg.Sessions * ob.cfg.Events}
	for _, b := range bodies {
		ph.Bytes += int64(len(b))
	}
	p := newPoster(ob.base, ob.token)
	start := time.Now()
	if err := postAll(ctx, p, otlpLogs, ct, bodies, ob.cfg.Concurrency); err != nil {
		return ph, fmt.Errorf("%s: %w", encoding, err)
	}
	posted := time.Since(start)
	last, err := lastSessionsSeq(ctx, ob.tb)
	if err != nil {
		return ph, err
	}
	done, err := ob.tb.commits.waitFor(ctx, last)
	if err != nil {
		return ph, fmt.Errorf("%s: %w", encoding, err)
	}
	s := done.Sub(start).Seconds()
	ph.PostSeconds, ph.Seconds = round(posted.Seconds()), round(s)
	ph.EventsPerS, ph.RequestsPer = round(float64(ph.Events)/s), round(float64(ph.Requests)/s)
	ph.MBPerSecond = round(float64(ph.Bytes) / s / 1e6)
	ph.Statuses, ph.Retried = p.statuses.snapshot(), p.refused.Load()
	ob.phases = append(ob.phases, encoding)
	return ph, nil
}

// postAll posts every body, concurrency at a time; a request answered
// other than 200 fails the phase (a partial success shows in the
// verification's counts).
func postAll(ctx context.Context, p *poster, path, contentType string, bodies [][]byte, concurrency int) error {
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs error
	for i, b := range bodies {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			status, err := p.postAs(ctx, path, contentType, b)
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("status %d", status)
			}
			if err != nil {
				mu.Lock()
				errs = errors.Join(errs, fmt.Errorf("request %d: %w", i, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errs
}

// lastSessionsSeq is SPINE_SESSIONS's last sequence: once every request
// was answered (each door answers after JetStream's ack), the phase's
// last envelope is at or before it.
func lastSessionsSeq(ctx context.Context, tb *testbed) (uint64, error) {
	st, err := tb.node.JS.Stream(ctx, streams.StreamSessions)
	if err != nil {
		return 0, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.LastSeq, nil
}
