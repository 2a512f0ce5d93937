package accounting_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

func TestMain(m *testing.M) { spinetest.Main(m) }

var ctx = context.Background()

// fixture is one test's spine with an accounting projector running.
type fixture struct {
	*spinetest.Harness
	a       *accounting.Accounting
	reg     *prometheus.Registry // the handler's metrics
	p       *streams.Projector
	mu      sync.Mutex
	want    uint64 // highest sequence published on an accounting subject
	done    uint64 // highest sequence committed and counted in the metrics
	commits chan struct{}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{Harness: spinetest.New(t), commits: make(chan struct{}, 1)}
	f.reg = prometheus.NewRegistry()
	f.a = accounting.New(accounting.Config{Registerer: f.reg})
	p, err := streams.NewProjector(streams.ProjectorConfig{Name: accounting.ProjectorName, Stream: streams.StreamSessions,
		Filter: accounting.Subjects(), Handler: f.a, Pool: f.Pool, JS: f.JS, MaxWait: 20 * time.Millisecond,
		Logger: spinetest.Logger(t), OnCommit: func(last uint64, msgs []streams.Message) {
			f.a.Committed(last, msgs)
			f.mu.Lock()
			f.done = max(f.done, last)
			f.mu.Unlock()
			select {
			case f.commits <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	f.p = p
	return f
}

// publish sends envelopes over NATS (a trusted producer).
func (f *fixture) publish(envs ...*streams.Envelope) {
	f.T.Helper()
	for _, e := range envs {
		ack, err := f.Pub.Publish(ctx, e, nil)
		if err != nil {
			f.T.Fatalf("publish %s: %v", e.ID, err)
		}
		f.saw(ack.Sequence)
	}
}

func (f *fixture) saw(seq uint64) {
	f.mu.Lock()
	f.want = max(f.want, seq)
	f.mu.Unlock()
}

// budget publishes a plan.budget event.
func (f *fixture) budget(b *accounting.Budget) {
	f.T.Helper()
	ack, err := accounting.PublishBudget(ctx, f.JS, b)
	if err != nil {
		f.T.Fatalf("publish budget: %v", err)
	}
	f.saw(ack.Sequence)
}

// wait blocks until the projector has committed everything published and
// counted it in the metrics.
func (f *fixture) wait() {
	f.T.Helper()
	f.mu.Lock()
	want := f.want
	f.mu.Unlock()
	deadline := time.NewTimer(spinetest.WaitTimeout)
	defer deadline.Stop()
	for f.committed() < want {
		select {
		case <-f.commits:
		case <-deadline.C:
			f.T.Fatalf("accounting at %d, want %d", f.committed(), want)
		}
	}
}

func (f *fixture) committed() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}

// metric is the value of the handler's counter name with the given labels
// (a subset of its labels; matching series are added up).
func (f *fixture) metric(name string, labels map[string]string) float64 {
	f.T.Helper()
	families, err := f.reg.Gather()
	if err != nil {
		f.T.Fatal(err)
	}
	sum := 0.0
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
	series:
		for _, m := range fam.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

type callRow struct {
	Status, Billing, Signal, Door, Model, Surface string
	Usage                                         *string
	Input, Output                                 *int64
	Cost                                          *string
}

// calls reads every router-call row of a session.
func (f *fixture) calls(session string) []callRow {
	f.T.Helper()
	rows, err := f.Pool.Query(ctx, `SELECT status, billing, billing_signal, door, served_model, execution_surface,
		usage::text, input_tokens, output_tokens, total_cost::text FROM router_calls WHERE session_id = $1`, session)
	if err != nil {
		f.T.Fatal(err)
	}
	defer rows.Close()
	var out []callRow
	for rows.Next() {
		var c callRow
		if err := rows.Scan(&c.Status, &c.Billing, &c.Signal, &c.Door, &c.Model, &c.Surface, &c.Usage, &c.Input,
			&c.Output, &c.Cost); err != nil {
			f.T.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		f.T.Fatal(err)
	}
	return out
}

func (f *fixture) count(sql string, args ...any) int {
	f.T.Helper()
	var n int
	if err := f.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		f.T.Fatalf("%s: %v", sql, err)
	}
	return n
}

// rollUpByHand adds router_calls rows a test wrote by hand to cost_days,
// as the projector adds the rows it writes (the statement is migration
// 014's, for the given sessions).
func (f *fixture) rollUpByHand(sessions ...string) {
	f.T.Helper()
	_, err := f.Pool.Exec(ctx, `INSERT INTO cost_days AS d
		SELECT org, (at AT TIME ZONE 'UTC')::date, billing, app, served_model, member, plan_id, worker_id,
			count(*), count(usage), count(total_cost),
			least(coalesce(sum(input_tokens), 0), 9223372036854775807)::bigint,
			least(coalesce(sum(output_tokens), 0), 9223372036854775807)::bigint,
			least(coalesce(sum(cache_read_tokens), 0), 9223372036854775807)::bigint,
			least(coalesce(sum(cache_write_tokens), 0), 9223372036854775807)::bigint,
			least(coalesce(sum(reasoning_tokens), 0), 9223372036854775807)::bigint,
			sum(total_cost)
		FROM router_calls WHERE session_id = ANY($1) GROUP BY 1, 2, 3, 4, 5, 6, 7, 8`, sessions)
	if err != nil {
		f.T.Fatalf("roll up %v: %v", sessions, err)
	}
}

func ptr[T any](v T) *T { return &v }
