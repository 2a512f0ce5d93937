package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spinehq/spine/server"
	"github.com/spinehq/spine/streams"
)

// maxDetail is how much of a dead letter's detail the table shows; --json
// and the read of one dead letter show all of it.
const maxDetail = 100

func runDeadLetters(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("deadletters", flag.ContinueOnError)
	base := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "bearer token (default $SPINE_TOKEN)")
	asJSON := fs.Bool("json", false, "print JSON")
	limit := fs.Int("limit", 0, "at most this many dead letters (1 to 5000; default 500)")
	after := fs.String("after", "", "start after this dead letter: the previous page's next (STREAM:SEQ)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine deadletters [flags]             your envelopes spine refused after accepting them, with the reason\n"+
			"                                            (an org admin's token: every member's of the org)\n"+
			"       spine deadletters STREAM:SEQ [flags]  one of them, with the message as stored")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fs.Usage()
		return usageError{fmt.Sprintf("deadletters: unexpected arguments %q (want none, or one STREAM:SEQ)", pos)}
	}
	c, err := newClient(*base, *token)
	if err != nil {
		return err
	}
	if len(pos) == 1 {
		return deadLetter(ctx, c, pos[0], *asJSON)
	}
	q := url.Values{}
	if *limit != 0 {
		q.Set("limit", strconv.Itoa(*limit))
	}
	if *after != "" {
		q.Set("after", *after)
	}
	var page server.DeadLetterList
	if printed, err := c.answer(ctx, "GET", "/v1/deadletters?"+q.Encode(), nil, *asJSON, &page); err != nil || printed {
		return err
	}
	printDeadLetters(&page)
	return nil
}

func printDeadLetters(page *server.DeadLetterList) {
	if len(page.DeadLetters) == 0 {
		fmt.Fprintln(stdout, "no dead letters")
		return
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEAD LETTER\tAT\tMEMBER\tREASON\tTYPE\tSESSION\tID\tDETAIL")
	for _, d := range page.DeadLetters {
		fmt.Fprintf(tw, "%s:%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Stream, d.Seq, d.At.UTC().Format(time.RFC3339),
			d.Member, d.Reason, orDash(d.Type), orDash(d.SessionID), orDash(d.ID), cut(d.Detail, maxDetail))
	}
	_ = tw.Flush()
	if page.More {
		fmt.Fprintf(stdout, "more dead letters follow: --after %s\n", page.Next)
	}
}

func deadLetter(ctx context.Context, c *client, ref string, asJSON bool) error {
	cur, err := streams.ParseDeadLetterCursor(ref)
	if err != nil || ref == "" {
		return usageError{fmt.Sprintf("deadletters: %q is not a dead letter (want STREAM:SEQ, as the list prints)", ref)}
	}
	var d streams.DeadLetter
	if printed, err := c.answer(ctx, "GET", fmt.Sprintf("/v1/deadletters/%s/%d", url.PathEscape(cur.Stream), cur.Seq), nil, asJSON, &d); err != nil || printed {
		return err
	}
	fmt.Fprintf(stdout, "dead letter %s:%d\nat          %s\nowner       %s/%s\nreason      %s\ndetail      %s\n",
		d.Stream, d.Seq, d.At.UTC().Format(time.RFC3339), d.Org, d.Member, d.Reason, d.Detail)
	fmt.Fprintf(stdout, "subject     %s\ntype        %s\nid          %s\nsession     %s\nmessage     %s\n",
		d.Subject, orDash(d.Type), orDash(d.ID), orDash(d.SessionID), d.Message)
	return nil
}

// cut shortens s to at most n runes, marking the cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
