package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Flood defaults: 300 requests of 1 MiB, all at once, enough to hold
// several times the default in-flight budget (256 MiB) at the door.
const (
	DefaultFloodRequests = 300
	DefaultFloodChunk    = 1 << 20
	DefaultFloodSettle   = 5 * time.Second
)

// FloodConfig configures `spine bench flood`: Requests ingest requests,
// Concurrency at a time, each a whole session with one chunk of
// ChunkBytes, posted to a running spine; with PID, the server process's
// resident memory is sampled throughout and until Settle after the last
// answer (its projectors are still working then).
type FloodConfig struct {
	URL, Token  string
	Requests    int           // 0 means 300
	Concurrency int           // 0 means Requests
	ChunkBytes  int           // 0 means 1 MiB
	PID         int           // the spine serve process; 0: memory not measured
	Settle      time.Duration // 0 means 5 s
}

// FloodResult is what `spine bench flood` prints.
type FloodResult struct {
	Benchmark   string         `json:"benchmark"` // "flood"
	Requests    int            `json:"requests"`
	Concurrency int            `json:"concurrency"`
	ChunkBytes  int            `json:"chunkBytes"`
	Statuses    map[string]int `json:"statuses"` // final answers
	Retried     int64          `json:"retried429"`
	Seconds     float64        `json:"seconds"`
	Server      *FloodMemory   `json:"server,omitempty"`
}

// FloodMemory is the server's resident memory around the flood.
type FloodMemory struct {
	PID            int   `json:"pid"`
	RSSBefore      int64 `json:"rssBeforeBytes"`
	PeakRSS        int64 `json:"peakRssBytes"`         // sampled every 20 ms, or VmHWM if higher and reset
	PeakReset      bool  `json:"peakResetBeforeFlood"` // VmHWM was reset (clear_refs): it covers the flood only
	RSSAfterSettle int64 `json:"rssAfterSettleBytes"`
}

// Flood posts the requests and reports their answers and the server's memory.
func Flood(ctx context.Context, cfg FloodConfig) (*FloodResult, error) {
	cfg.Requests = cmp.Or(cfg.Requests, DefaultFloodRequests)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, cfg.Requests)
	cfg.ChunkBytes = cmp.Or(cfg.ChunkBytes, DefaultFloodChunk)
	cfg.Settle = cmp.Or(cfg.Settle, DefaultFloodSettle)
	if cfg.URL == "" || cfg.Token == "" {
		return nil, fmt.Errorf("%w: flood needs the URL and a token of a running spine", ErrInvalidConfig)
	}
	p := newPoster(cfg.URL, cfg.Token)
	res := &FloodResult{Benchmark: "flood", Requests: cfg.Requests, Concurrency: cfg.Concurrency, ChunkBytes: cfg.ChunkBytes}
	sampler := startSampler(cfg.PID)
	began := time.Now()
	err := flood(ctx, p, cfg)
	res.Seconds = round(time.Since(began).Seconds())
	res.Statuses, res.Retried = p.statuses.snapshot(), p.refused.Load()
	if sampler != nil {
		time.Sleep(cfg.Settle) // the server's projectors work on after the last answer
		res.Server = sampler.stop()
	}
	return res, err
}

func flood(ctx context.Context, p *poster, cfg FloodConfig) error {
	text := randomText(rand.New(rand.NewPCG(5, 6)), cfg.ChunkBytes)
	run := randomHex(4)
	sem := make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs error
	for i := range cfg.Requests {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			body, _ := json.Marshal(sessionEnvelopes(fmt.Sprintf("flood-%s-%05d", run, i), 1, text))
			if status, err := p.post(ctx, "/v1/ingest", body); err != nil || status != http.StatusMultiStatus {
				mu.Lock()
				errs = errors.Join(errs, fmt.Errorf("request %d: status %d: %v", i, status, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errs
}

// sampler follows a process's resident memory.
type sampler struct {
	pid   string
	mem   FloodMemory
	done  chan struct{}
	ended chan struct{}
}

func startSampler(pid int) *sampler {
	if pid <= 0 {
		return nil
	}
	s := &sampler{pid: strconv.Itoa(pid), done: make(chan struct{}), ended: make(chan struct{})}
	s.mem.PID, s.mem.RSSBefore = pid, memoryOf(s.pid).RSSBytes
	s.mem.PeakReset = os.WriteFile("/proc/"+s.pid+"/clear_refs", []byte("5"), 0) == nil
	go s.run()
	return s
}

func (s *sampler) run() {
	defer close(s.ended)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mem.PeakRSS = max(s.mem.PeakRSS, memoryOf(s.pid).RSSBytes)
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
	}
}

func (s *sampler) stop() *FloodMemory {
	close(s.done)
	<-s.ended
	m := memoryOf(s.pid)
	if s.mem.PeakReset {
		s.mem.PeakRSS = max(s.mem.PeakRSS, m.PeakRSSBytes)
	}
	s.mem.RSSAfterSettle = m.RSSBytes
	return &s.mem
}
