package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/trace"
)

func runTrace(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	base := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "bearer token (default $SPINE_TOKEN)")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine trace DIGEST|ARTIFACT|SESSION|PLAN_RUN|PLAN [--json]\n\n"+
			"Follows a file (blake3:…), an artifact or a session to who produced it, or a plan (a plan run id\n"+
			"or a plan id) down to each step, the sessions it ran and their router calls, and the plan's spend.")
		fs.PrintDefaults()
	}
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if id == "" && fs.NArg() == 1 {
		id = fs.Arg(0)
	}
	if id == "" {
		fs.Usage()
		return usageError{"trace needs an id"}
	}
	c, err := newClient(*base, *token)
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do(ctx, "GET", "/v1/provenance/"+url.PathEscape(id), nil, &raw); err != nil {
		return err
	}
	if *asJSON {
		_, err := stdout.Write(append(raw, '\n'))
		return err
	}
	return printTrace(stdout, raw)
}

// printTrace writes a provenance answer as text: a file's, a session's
// or a plan's, told apart by the field each alone has.
func printTrace(w io.Writer, raw json.RawMessage) error {
	var probe struct {
		Digest string           `json:"digest"`
		Runs   *json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return err
	}
	switch {
	case probe.Digest != "":
		var t trace.File
		if err := json.Unmarshal(raw, &t); err != nil {
			return err
		}
		printFileTrace(w, &t)
	case probe.Runs != nil:
		var p trace.Plan
		if err := json.Unmarshal(raw, &p); err != nil {
			return err
		}
		printPlanTrace(w, &p)
	default:
		var st trace.Session
		if err := json.Unmarshal(raw, &st); err != nil {
			return err
		}
		printSessionTrace(w, &st)
	}
	return nil
}

func printFileTrace(w io.Writer, t *trace.File) {
	stored := "stored"
	if !t.Stored {
		stored = "bytes not stored"
	}
	fmt.Fprintf(w, "%s  (%d bytes, %s)\n", t.Digest, t.Size, stored)
	for i, a := range t.Artifacts {
		last := i == len(t.Artifacts)-1
		printArtifact(w, a, branch(last), indent(last))
	}
}

func branch(last bool) string {
	if last {
		return "└─ "
	}
	return "├─ "
}

func indent(last bool) string {
	if last {
		return "   "
	}
	return "│  "
}

func printArtifact(w io.Writer, a trace.Artifact, first, rest string) {
	fmt.Fprintf(w, "%s%s %q  [%s]  %s/%s  %s\n", first, a.Kind, a.Name, a.ID, a.Org, a.Member, a.CreatedAt.Format("2006-01-02 15:04:05Z07:00"))
	switch {
	case a.Kind == "upload":
		fmt.Fprintf(w, "%s   uploaded by %s; producedBy: none (a person uploaded it)\n", rest, a.UploadedBy)
	case string(a.ProducedBy) == "null":
		fmt.Fprintf(w, "%s   producedBy: pending (the session has not ended)\n", rest)
	default:
		var by struct{ App, Model, Effort, SessionID string }
		_ = json.Unmarshal(a.ProducedBy, &by)
		fmt.Fprintf(w, "%s   producedBy: %s, model %s, effort %s, session %s\n", rest, by.App, notReported(by.Model), notReported(by.Effort), by.SessionID)
	}
	if s := a.Session; s != nil {
		fmt.Fprintf(w, "%s   session %s: %s, billing %s, run %s", rest, s.ID, s.Status, billingOf(s), s.RunID)
		if s.ParentRunID != "" {
			fmt.Fprintf(w, " (for step %s of run %s)", s.ParentStepID, s.ParentRunID)
		}
		fmt.Fprintln(w)
	}
	if st := a.Step; st != nil {
		fmt.Fprintf(w, "%s   step %d (%s) at %s\n", rest, st.Idx, st.Action, st.At.Format("15:04:05"))
	}
	if a.RouterCall != nil {
		printRouterCall(w, rest+"   ", rest+"   ", a.RouterCall)
	}
	if a.ContentMissing || a.ContentOmitted {
		fmt.Fprintf(w, "%s   content missing: %v, omitted over the cap: %v\n", rest, a.ContentMissing, a.ContentOmitted)
	}
}

func printSessionTrace(w io.Writer, t *trace.Session) {
	s := t.Session
	fmt.Fprintf(w, "session %s  %s  %s, model %s, effort %s, billing %s\n", s.ID, s.Status, s.App, notReported(s.Model), notReported(s.Effort), billingOf(&s))
	if s.ParentRunID != "" {
		fmt.Fprintf(w, "├─ serves step %s of run %s\n", s.ParentStepID, s.ParentRunID)
	}
	fmt.Fprintf(w, "├─ run %s: %d steps, %d observations\n", s.RunID, t.Steps, t.Observations)
	if t.RouterCall != nil {
		printRouterCall(w, "├─ ", "│  ", t.RouterCall)
	}
	fmt.Fprintf(w, "└─ %s\n", plural(len(t.Artifacts), "artifact"))
	for i, a := range t.Artifacts {
		last := i == len(t.Artifacts)-1
		a.RouterCall = nil // the session's, printed above
		printArtifact(w, a, "   "+branch(last), "   "+indent(last))
	}
}

// billingOf is the router-call row's billing class, or says it is not
// recorded yet.
func billingOf(s *trace.SessionRow) string {
	if s.Billing != "" {
		return s.Billing
	}
	return "(no router call yet)"
}

// printRouterCall writes a session's router-call row as lines, the first
// after first and the rest after rest: billing and the machine's signal,
// what served it, tokens by kind and the cost, each as reported and "not
// reported" when it was not (never 0).
func printRouterCall(w io.Writer, first, rest string, c *accounting.Call) {
	fmt.Fprintf(w, "%srouter call: billing %s (signal %s), door %s, status %s\n", first, c.Billing,
		cmp.Or(c.BillingSignal, "silent"), notReported(c.Door), c.Status)
	fmt.Fprintf(w, "%s  served model %s, effort %s\n", rest, notReported(c.ServedModel), notReported(c.ServedEffort))
	fmt.Fprintf(w, "%s  tokens %s\n", rest, tokensLine(c.Tokens))
	cost := "not reported"
	if c.TotalCost != nil {
		cost = accounting.FormatCost(*c.TotalCost) + " (as reported)"
	}
	fmt.Fprintf(w, "%s  cost %s\n", rest, cost)
}

// tokensLine is a call's tokens by kind; input counts the cache reads and
// writes, output the reasoning (docs/counting.md).
func tokensLine(t *accounting.Tokens) string {
	if t == nil {
		return "not reported"
	}
	return fmt.Sprintf("input %d (cache read %d, cache write %d), output %d (reasoning %d), total %d",
		t.Input, t.CacheRead, t.CacheWrite, t.Output, t.Reasoning, t.Total)
}
