package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spinehq/spine/trace"
)

// printPlanTrace writes a plan from the top down: each run, its steps, the
// sessions each step ran with their router calls, then each plan's spend.
func printPlanTrace(w io.Writer, p *trace.Plan) {
	steps := 0
	for _, r := range p.Runs {
		steps += len(r.Steps)
	}
	fmt.Fprintf(w, "%s  %s; %s, %s, %s\n", p.ID, plansOf(p.PlanIDs), plural(len(p.Runs), "run"),
		plural(steps, "step"), plural(p.Sessions, "session"))
	if p.More {
		fmt.Fprintf(w, "(the first %d sessions by start; the plan has more)\n", p.Sessions)
	}
	for i, r := range p.Runs {
		last := i == len(p.Runs)-1
		printPlanRun(w, &r, branch(last), indent(last))
	}
	printPlanSpends(w, p)
}

// printPlanRun writes a plan run's steps and their sessions as a tree, its
// first line after first and the rest after rest.
func printPlanRun(w io.Writer, r *trace.PlanRun, first, rest string) {
	if r.RunID == "" {
		fmt.Fprintf(w, "%s(sessions that named no plan run)  %s\n", first, plansOf(r.PlanIDs))
	} else {
		fmt.Fprintf(w, "%srun %s  %s\n", first, r.RunID, plansOf(r.PlanIDs))
	}
	for i, st := range r.Steps {
		last := i == len(r.Steps)-1
		name := "step " + st.ID
		if st.ID == "" {
			name = "(no step named)"
		}
		fmt.Fprintf(w, "%s%s%s\n", rest, branch(last), name)
		for j, s := range st.Sessions {
			lastSession := j == len(st.Sessions)-1
			printPlanSession(w, &s, rest+indent(last)+branch(lastSession), rest+indent(last)+indent(lastSession))
		}
	}
}

// printPlanSession writes one session of a step: what ran it and where,
// model and effort as the app reported them, its recording and its router
// call.
func printPlanSession(w io.Writer, s *trace.PlanSession, first, rest string) {
	where := ""
	if s.WorkerID != "" {
		where = " on " + s.WorkerID
	}
	fmt.Fprintf(w, "%ssession %s  %s  %s %s%s, model %s, effort %s\n", first, s.ID, s.Status, s.App, s.Kind, where,
		notReported(s.Model), notReported(s.Effort))
	when := "started " + s.StartedAt.Format(timeLayout)
	if s.EndedAt != nil {
		when += ", ended " + s.EndedAt.Format(timeLayout)
	}
	recorded := plural(s.RecordedSteps, "step") + " recorded"
	if s.DroppedActions > 0 {
		recorded += fmt.Sprintf(", incomplete: %d dropped", s.DroppedActions)
	}
	fmt.Fprintf(w, "%s   run %s: %s; %s\n", rest, s.RunID, recorded, when)
	if s.RouterCall == nil {
		fmt.Fprintf(w, "%s   router call: none yet (the session has not ended)\n", rest)
		return
	}
	printRouterCall(w, rest+"   ", rest+"   ", s.RouterCall)
}

// printPlanSpends writes each plan's spend, or why there is none.
func printPlanSpends(w io.Writer, p *trace.Plan) {
	switch {
	case len(p.PlanIDs) == 0:
		fmt.Fprintln(w, "\nspend: none to show (no session names a plan id)")
		return
	case len(p.Spend) == 0:
		fmt.Fprintln(w, "\nspend: none yet (no session of the plan has ended)")
		return
	}
	fmt.Fprintln(w, "\nspend (metered, subscription and unknown apart; the ceiling counts metered dollars, the loop cap every call)")
	for i, s := range p.Spend {
		if i > 0 {
			fmt.Fprintln(w)
		}
		printPlanSpend(w, s, "  ")
	}
}

const timeLayout = "2006-01-02 15:04:05Z07:00"

func plansOf(ids []string) string {
	switch len(ids) {
	case 0:
		return "(no plan id)"
	case 1:
		return "plan " + ids[0]
	}
	return "plans " + strings.Join(ids, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
