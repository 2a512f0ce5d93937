package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"

	"github.com/spinehq/spine/server"
)

func runCancel(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	base := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "bearer token (default $SPINE_TOKEN)")
	asJSON := fs.Bool("json", false, "print JSON")
	reason := fs.String("reason", "", "why, recorded with the cancel")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine cancel ID [flags]   ask a running session of yours to stop; if its producer\n"+
			"                                 has not ended it within the grace (SPINE_CANCEL_GRACE), spine ends it cancelled")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return usageError{fmt.Sprintf("cancel needs exactly one session ID, got %q", pos)}
	}
	c, err := newClient(*base, *token)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(server.CancelRequest{Reason: *reason})
	var res server.CancelResult
	if printed, err := c.answer(ctx, "POST", "/v1/sessions/"+url.PathEscape(pos[0])+"/cancel", body, *asJSON, &res); err != nil || printed {
		return err
	}
	again := ""
	if res.Duplicate {
		again = " (already requested)"
	}
	fmt.Fprintf(stdout, "cancel requested for session %s%s: control %s at seq %d\n"+
		"its producer is told to stop; if the session has not ended within %gs, spine ends it cancelled\n",
		res.SessionID, again, res.ID, res.Seq, res.GraceSeconds)
	return nil
}
