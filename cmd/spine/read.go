package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/trace"
)

func runRead(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("read", flag.ContinueOnError)
	base := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "bearer token (default $SPINE_TOKEN)")
	asJSON := fs.Bool("json", false, "print JSON")
	follow := fs.Bool("follow", false, "transcript: keep reading until the session ends")
	since := fs.Int64("since", 0, "start after this seq (transcript) or step idx (steps)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine read session|transcript|steps ID [flags]\n\nsteps takes a run id (a session's sessionRunId or a plan run's id) or a session id.")
		fs.PrintDefaults()
	}
	what, rest := "", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		what, rest = args[0], args[1:]
	}
	var id string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		id, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if id == "" && fs.NArg() > 0 {
		id = fs.Arg(0)
	}
	if id == "" || (what != "session" && what != "transcript" && what != "steps") {
		fs.Usage()
		return usageError{"read needs session|transcript|steps and an ID"}
	}
	c, err := newClient(*base, *token)
	if err != nil {
		return err
	}
	switch what {
	case "session":
		return readSession(ctx, c, id, *asJSON)
	case "transcript":
		return readTranscript(ctx, c, id, *since, *follow, *asJSON)
	default:
		return readSteps(ctx, c, id, int(*since), *asJSON)
	}
}

func readSession(ctx context.Context, c *client, id string, asJSON bool) error {
	var s recorder.Session
	if printed, err := c.answer(ctx, "GET", "/v1/sessions/"+url.PathEscape(id), nil, asJSON, &s); err != nil || printed {
		return err
	}
	fmt.Fprintf(stdout, "session   %s\napp       %s (%s, level %q)\nowner     %s/%s\nstatus    %s\nrun       %s\nsteps     %d recorded, %d dropped (complete: %v)\n",
		s.ID, s.App, s.Kind, s.Level, s.Org, s.Member, s.Status, s.SessionRunID, s.RecordedSteps, s.DroppedActions, s.Complete)
	fmt.Fprintf(stdout, "model     %s\neffort    %s\nbilling   %s\ntranscript %s\n", notReported(s.Model), notReported(s.Effort), notReported(s.Billing), orDash(s.TranscriptFileID))
	if s.Error != "" {
		fmt.Fprintf(stdout, "error     %s\n", s.Error)
	}
	return nil
}

// notReported is what an app or machine said, or says it said nothing
// (a model, an effort, a billing class): the words every page uses.
func notReported(s string) string { return cmp.Or(s, "not reported") }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func readTranscript(ctx context.Context, c *client, id string, since int64, follow, asJSON bool) error {
	for {
		var page recorder.TranscriptPage
		path := fmt.Sprintf("/v1/sessions/%s/transcript?since=%d", url.PathEscape(id), since)
		if err := c.do(ctx, "GET", path, nil, &page); err != nil {
			return err
		}
		for _, ch := range page.Chunks {
			printChunk(ch, asJSON)
		}
		since = page.Next
		if page.More {
			continue
		}
		if !follow || page.Ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func printChunk(ch recorder.Chunk, asJSON bool) {
	if asJSON {
		_ = json.NewEncoder(stdout).Encode(ch)
		return
	}
	if ch.Stream == "stderr" {
		fmt.Fprint(os.Stderr, ch.Text)
		return
	}
	fmt.Fprint(stdout, ch.Text)
}

func readSteps(ctx context.Context, c *client, id string, since int, asJSON bool) error {
	runID := id
	if !strings.HasPrefix(id, "run-") {
		runID = recorder.RunID(id)
	}
	for {
		var raw json.RawMessage
		path := fmt.Sprintf("/v1/runs/%s/steps?since=%d", url.PathEscape(runID), since)
		err := c.do(ctx, "GET", path, nil, &raw)
		var notRun *apiError
		if errors.As(err, &notRun) && notRun.Status == http.StatusNotFound && runID != id {
			runID = id // not a session: a plan run's id, perhaps
			continue
		}
		if err != nil {
			return err
		}
		var page spine.StepsPage
		if err := json.Unmarshal(raw, &page); err != nil {
			return err
		}
		if page.Kind == trace.KindPlanRun { // one answer, not paged
			return printPlanRunSteps(raw, asJSON)
		}
		if asJSON {
			_ = json.NewEncoder(stdout).Encode(page)
		} else {
			printSteps(&page)
		}
		if !page.More {
			return nil
		}
		since = page.Next
	}
}

// printPlanRunSteps writes a plan run's steps and the sessions each ran.
func printPlanRunSteps(raw json.RawMessage, asJSON bool) error {
	if asJSON {
		_, err := stdout.Write(append(raw, '\n'))
		return err
	}
	var ps trace.PlanRunSteps
	if err := json.Unmarshal(raw, &ps); err != nil {
		return err
	}
	printPlanRun(stdout, &ps.PlanRun, "", "")
	if ps.More {
		fmt.Fprintf(stdout, "(the first %d sessions by start; the run has more)\n", ps.Sessions)
	}
	return nil
}

func printSteps(page *spine.StepsPage) {
	for _, n := range page.Notes {
		fmt.Fprintf(stdout, "  note  %s\n", n.Body)
	}
	for _, s := range page.Steps {
		fmt.Fprintf(stdout, "%4d  %-10s %s\n", s.Idx, s.Action, s.Detail)
		for _, o := range s.Observations {
			fmt.Fprintf(stdout, "      → %s\n", o.Body)
		}
	}
}
