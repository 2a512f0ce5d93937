package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/spinehq/spine/trace"
)

func runTrace(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	base := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "bearer token (default $SPINE_TOKEN)")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine trace DIGEST|ARTIFACT|SESSION [--json]\n\nFollows a file (blake3:…), an artifact or a session to who produced it.")
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

func printTrace(w io.Writer, raw json.RawMessage) error {
	var probe struct {
		Digest  string `json:"digest"`
		Session *struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return err
	}
	if probe.Digest == "" {
		var st trace.Session
		if err := json.Unmarshal(raw, &st); err != nil {
			return err
		}
		printSessionTrace(w, &st)
		return nil
	}
	var t trace.File
	if err := json.Unmarshal(raw, &t); err != nil {
		return err
	}
	stored := "stored"
	if !t.Stored {
		stored = "bytes not stored"
	}
	fmt.Fprintf(w, "%s  (%d bytes, %s)\n", t.Digest, t.Size, stored)
	for i, a := range t.Artifacts {
		last := i == len(t.Artifacts)-1
		printArtifact(w, a, branch(last), indent(last))
	}
	return nil
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
		fmt.Fprintf(w, "%s   producedBy: %s, model %s, effort %s, session %s\n", rest, by.App, orUnknown(by.Model), orUnknown(by.Effort), by.SessionID)
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
	if string(a.RouterCall) != "null" && len(a.RouterCall) > 0 {
		fmt.Fprintf(w, "%s   router call %s\n", rest, a.RouterCall)
	}
	if a.ContentMissing || a.ContentOmitted {
		fmt.Fprintf(w, "%s   content missing: %v, omitted over the cap: %v\n", rest, a.ContentMissing, a.ContentOmitted)
	}
}

func printSessionTrace(w io.Writer, t *trace.Session) {
	s := t.Session
	fmt.Fprintf(w, "session %s  %s  %s, model %s, effort %s, billing %s\n", s.ID, s.Status, s.App, orUnknown(s.Model), orUnknown(s.Effort), billingOf(&s))
	if s.ParentRunID != "" {
		fmt.Fprintf(w, "├─ serves step %s of run %s\n", s.ParentStepID, s.ParentRunID)
	}
	fmt.Fprintf(w, "├─ run %s: %d steps, %d observations\n", s.RunID, t.Steps, t.Observations)
	if string(t.RouterCall) != "null" && len(t.RouterCall) > 0 {
		fmt.Fprintf(w, "├─ router call %s\n", t.RouterCall)
	}
	fmt.Fprintf(w, "└─ %d artifacts\n", len(t.Artifacts))
	for i, a := range t.Artifacts {
		last := i == len(t.Artifacts)-1
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
