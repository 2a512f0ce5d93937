package recorder_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/checksum"
	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

// workload is a mixed ingest: sessions with holes, duplicates, events,
// identical writes, bad messages, a disconnect and ends.
func workload(part int) []*streams.Envelope {
	var out []*streams.Envelope
	for s := 0; s < 4; s++ {
		id := fmt.Sprintf("p%d-s%d", part, s)
		out = append(out, spinetest.Start(id))
		for seq := int64(1); seq <= 30; seq++ {
			switch {
			case seq%11 == 0:
				continue // a hole
			case seq%7 == 0:
				out = append(out, spinetest.Write(id, seq, "f.txt", strings.Repeat("same ", 40)))
			case seq%5 == 0:
				out = append(out, spinetest.Command(id, seq, "go test"))
			default:
				out = append(out, spinetest.Text(id, seq, fmt.Sprintf("line %d of %s\n", seq, id)))
			}
			if seq%9 == 0 {
				dup := spinetest.Text(id, seq-1, "dup")
				dup.ID += "-dup"
				out = append(out, dup)
			}
		}
		if s != 3 {
			out = append(out, spinetest.End(id, "done", "claude-opus-4", ""))
		}
	}
	out = append(out, telemetryWorkload(part)...)
	bad := spinetest.End(fmt.Sprintf("p%d-ghost", part), "done", "", "")
	out = append(out, bad)
	d := spinetest.Disconnect("w1", fmt.Sprintf("part %d over", part))
	d.ID += fmt.Sprint(part)
	return append(out, d)
}

// telemetryWorkload is a telemetry session told twice over (requests with
// and without cost, tools by hook and OTLP), ended, then a late request;
// and telemetry sessions a start then made its door's.
func telemetryWorkload(part int) []*streams.Envelope {
	t, m := fmt.Sprintf("p%d-t", part), fmt.Sprintf("p%d-m", part)
	var out []*streams.Envelope
	for i := int64(1); i <= 6; i++ {
		var c *float64
		if i%2 == 0 {
			c = cost(float64(i) / 10)
		}
		r := spinetest.Request(t, i, fmt.Sprintf("req_%d", i), "claude-opus-4-8", usage(i, 2*i, 3*i, 0), c)
		tool := spinetest.ToolUse(t, i, fmt.Sprintf("toolu_%d", i), streams.PhasePost)
		out = append(out, r, resent(r, "again"), spinetest.ToolUse(t, i, fmt.Sprintf("toolu_%d", i), streams.PhasePre),
			tool, resent(tool, "otlp"))
	}
	out = append(out, telemetryEnd(t, 50), spinetest.Request(t, 60, "req_late", "claude-sonnet-5", usage(1, 1, 1, 1), cost(0.05)),
		spinetest.Request(m, 1, "req_1", "claude-opus-4-8", usage(1, 1, 0, 0), nil), hookCommand(m, 2, "toolu_b", "ls"),
		telemetryMCP(m, 3, "toolu_mcp"), spinetest.Start(m), spinetest.Text(m, 1, "merged\n"), spinetest.Command(m, 2, "ls"),
		spinetest.Event(m, 3, &streams.Event{Action: "mcp_call", Server: "github", Tool: "search", CallID: "toolu_mcp"}),
		spinetest.End(m, "done", "claude-opus-4-8", ""))
	// Started after its telemetry, and never ended by its door.
	r := fmt.Sprintf("p%d-r", part)
	return append(out, spinetest.Request(r, 1, "req_1", "claude-opus-4-8", usage(2, 2, 0, 0), cost(0.2)),
		spinetest.Start(r), spinetest.Text(r, 1, "running\n"))
}

// Stopping the projector at random points, including between commit and
// ack, many times, leaves projections identical to an uninterrupted run.
func TestCrashSafety(t *testing.T) {
	h := spinetest.New(t)
	parts := 3
	publishPart := func(i int) { h.Publish(workload(i)...) }

	// The uninterrupted run.
	for i := 0; i < parts; i++ {
		publishPart(i)
	}
	p := h.StartRecorder(&spinetest.RecorderOpts{BatchSize: 16})
	h.WaitCaughtUp()
	p.Stop()
	want, err := checksum.Compute(ctx, h.Pool)
	if err != nil {
		t.Fatal(err)
	}

	// The interrupted run, into a second database from the same log.
	pool2, _ := pgtest.New(t)
	rng := rand.New(rand.NewPCG(7, 11))
	final := h.LastSeq()
	stops := 0
	for round := 0; ; round++ {
		crashAt := rng.IntN(4) + 1
		batches := 0
		p := h.StartRecorder(&spinetest.RecorderOpts{Pool: pool2, BatchSize: rng.IntN(20) + 3,
			BeforeAck: func(last uint64) error {
				batches++
				if batches == crashAt || last >= final {
					return errors.New("crash between commit and ack")
				}
				return nil
			}})
		err := p.Wait()
		if err == nil {
			t.Fatal("projector stopped without the crash hook")
		}
		if !errors.Is(err, streams.ErrStopped) {
			t.Fatalf("projector: %v", err)
		}
		stops++
		if p.Checkpoint() >= h.LastSeq() {
			break
		}
		if round > 500 {
			t.Fatal("interrupted run never caught up")
		}
	}
	got, err := checksum.Compute(ctx, pool2)
	if err != nil {
		t.Fatal(err)
	}
	if d := checksum.Diff(want, got); len(d) > 0 {
		for _, tbl := range d {
			t.Errorf("%s: uninterrupted %s, interrupted %s", tbl, want[tbl], got[tbl])
		}
	}
	if stops < 10 {
		t.Fatalf("only %d stops: the test did not exercise crashes", stops)
	}
	t.Logf("%d crashes between commit and ack; projections identical", stops)
}

// Two projector instances racing for the same durable consumer and the same
// database write no row twice: the checkpoint row is locked per batch and
// anything at or below it is skipped.
func TestTwoProjectorsRacing(t *testing.T) {
	h := spinetest.New(t)
	for i := 0; i < 3; i++ {
		h.Publish(workload(i)...)
	}
	p := h.StartRecorder(&spinetest.RecorderOpts{BatchSize: 16})
	h.WaitCaughtUp()
	p.Stop()
	want, err := checksum.Compute(ctx, h.Pool)
	if err != nil {
		t.Fatal(err)
	}

	pool2, _ := pgtest.New(t)
	a := h.StartRecorder(&spinetest.RecorderOpts{Pool: pool2, BatchSize: 5})
	b := h.StartRecorder(&spinetest.RecorderOpts{Pool: pool2, BatchSize: 7}) // resets the consumer under a's feet
	final := h.LastSeq()
	for max(a.Checkpoint(), b.Checkpoint()) < final {
		h.WaitCommit()
	}
	a.Stop()
	b.Stop()
	got, err := checksum.Compute(ctx, pool2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range checksum.Diff(want, got) {
		t.Errorf("%s: single %s, racing %s", tbl, want[tbl], got[tbl])
	}
}
