package trace_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/trace"
)

// A plan's trace lists at most MaxPlanSessions sessions, the first by
// start, and says there were more; an empty id is no plan (sessions that
// name no plan run or plan are not one).
func TestPlanTraceIsBounded(t *testing.T) {
	h := spinetest.New(t)
	h.StartRecorder(nil)
	var envs []*streams.Envelope
	for i := range trace.MaxPlanSessions + 1 {
		s := spinetest.Start(fmt.Sprintf("s%04d", i))
		s.At = spinetest.T0.Add(time.Duration(i) * time.Second)
		s.ParentRunID, s.StepID = "big-run", fmt.Sprintf("step-%d", i%3)
		envs = append(envs, s)
	}
	envs = append(envs, spinetest.Start("loose")) // names no plan run
	h.Publish(envs...)
	h.WaitCaughtUp()

	ctx, alice := context.Background(), streams.Owner{Org: "acme", Member: "alice"}
	p, err := trace.OfPlan(ctx, h.Pool, alice, "big-run", nil)
	if err != nil || !p.More || p.Sessions != trace.MaxPlanSessions || len(p.Runs) != 1 || len(p.Runs[0].Steps) != 3 ||
		len(p.PlanIDs) != 0 || len(p.Spend) != 0 {
		t.Fatalf("trace = %+v, %v", p, err)
	}
	first := p.Runs[0].Steps[0].Sessions
	if p.Runs[0].Steps[0].ID != "step-0" || first[0].ID != "s0000" || first[len(first)-1].ID != "s0999" {
		t.Fatalf("step-0's sessions run %s … %s, want s0000 … s0999 (s1000 cut)", first[0].ID, first[len(first)-1].ID)
	}
	steps, err := trace.StepsOfPlanRun(ctx, h.Pool, alice, "big-run")
	if err != nil || !steps.More || steps.Sessions != trace.MaxPlanSessions || steps.Kind != trace.KindPlanRun {
		t.Fatalf("steps = %+v, %v", steps, err)
	}
	for _, id := range []string{"", "loose", "run-loose"} {
		if _, err := trace.OfPlan(ctx, h.Pool, alice, id, nil); !errors.Is(err, trace.ErrNotFound) {
			t.Errorf("OfPlan(%q) = %v, want ErrNotFound", id, err)
		}
		if _, err := trace.StepsOfPlanRun(ctx, h.Pool, alice, id); !errors.Is(err, trace.ErrNotFound) {
			t.Errorf("StepsOfPlanRun(%q) = %v, want ErrNotFound", id, err)
		}
	}
	if _, err := trace.OfPlan(ctx, h.Pool, streams.Owner{Org: "acme", Member: "bob"}, "big-run", nil); !errors.Is(err, trace.ErrNotFound) {
		t.Errorf("bob's trace of alice's plan run = %v, want ErrNotFound", err)
	}
}
