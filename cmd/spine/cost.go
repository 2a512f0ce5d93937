package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spinehq/spine/accounting"
)

func runCost(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cost", flag.ContinueOnError)
	base := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "bearer token (default $SPINE_TOKEN)")
	asJSON := fs.Bool("json", false, "print JSON")
	from := fs.String("from", "", "first day (YYYY-MM-DD) or instant (RFC 3339); default 30 days before --to")
	to := fs.String("to", "", "last day (inclusive) or instant (exclusive); default now")
	groupBy := fs.String("group-by", "day", "day, week, month, app, model, billing, member, machine, plan or session")
	limit := fs.Int("limit", 0, "at most this many rows (1 to 10000; default every row); the total covers every page")
	after := fs.String("after", "", "start after this key: the previous page's next (\"more rows follow\")")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine cost [flags]          your org's router calls: calls, tokens and reported dollars,\n"+
			"                                   metered, subscription and unknown billing apart\n"+
			"       spine cost plan ID [flags]  where a plan stands against its dollar ceiling and loop cap\n"+
			"                                   (a member's token: that member's own calls on it, no budget)")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	var plan string
	switch {
	case len(pos) == 0:
	case pos[0] == "plan" && len(pos) == 2:
		plan = pos[1]
	case pos[0] == "plan":
		fs.Usage()
		return usageError{fmt.Sprintf("cost plan needs exactly one plan ID, got %q", pos[1:])}
	default:
		fs.Usage()
		return usageError{fmt.Sprintf("cost: unexpected arguments %q (want none, or plan ID)", pos)}
	}
	if plan != "" {
		var summaryOnly []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "from" || f.Name == "to" || f.Name == "group-by" || f.Name == "limit" || f.Name == "after" {
				summaryOnly = append(summaryOnly, "--"+f.Name)
			}
		})
		if len(summaryOnly) > 0 {
			return usageError{fmt.Sprintf("cost plan reports the plan's whole life: %s only apply to the summary", strings.Join(summaryOnly, ", "))}
		}
	}
	c, err := newClient(*base, *token)
	if err != nil {
		return err
	}
	if plan != "" {
		return costPlan(ctx, c, plan, *asJSON)
	}
	q := url.Values{"groupBy": {*groupBy}}
	for k, v := range map[string]string{"from": *from, "to": *to} {
		if v != "" {
			q.Set(k, v)
		}
	}
	fs.Visit(func(f *flag.Flag) { // an empty --after is a key (the empty plan or model)
		switch f.Name {
		case "limit":
			q.Set("limit", strconv.Itoa(*limit))
		case "after":
			q.Set("after", *after)
		}
	})
	var s accounting.Summary
	if printed, err := c.answer(ctx, "GET", "/v1/cost/summary?"+q.Encode(), nil, *asJSON, &s); err != nil || printed {
		return err
	}
	printCostSummary(&s)
	return nil
}

func printCostSummary(s *accounting.Summary) {
	scope := "org " + s.Org
	if s.Member != "" {
		scope += ", member " + s.Member + "'s" // a member's token: their own calls only
	}
	fmt.Fprintf(stdout, "%s, calls that ended %s to %s, by %s\n\n", scope, s.From.Format("2006-01-02 15:04"),
		s.To.Format("2006-01-02 15:04"), s.GroupBy)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, s.GroupBy+"\t")
	for _, b := range accounting.BillingClasses {
		fmt.Fprintf(tw, "%s calls\ttokens\treported $\t", b)
	}
	fmt.Fprintln(tw)
	for _, r := range append(s.Rows, s.Total) {
		fmt.Fprint(tw, accounting.GroupLabel(r.Key, s.GroupBy)+"\t")
		for _, b := range accounting.BillingClasses {
			c := r.Cell(b)
			fmt.Fprintf(tw, "%d\t%s\t%s\t", c.Calls, tokenCell(c), dollarCell(c))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	fmt.Fprintln(stdout, "\n\"not reported\": no app reported it (unknown, not $0); \"(n/m)\": n of m calls reported.")
	if s.Next != nil {
		fmt.Fprintf(stdout, "more rows follow: --after %q (the total covers every page)\n", *s.Next)
	}
}

func tokenCell(c *accounting.Cell) string {
	switch {
	case c.Calls == 0:
		return "-"
	case c.CallsWithUsage == 0:
		return "not reported"
	case c.CallsWithUsage < c.Calls:
		return fmt.Sprintf("%d (%d/%d)", c.Tokens.Total, c.CallsWithUsage, c.Calls)
	}
	return strconv.FormatInt(c.Tokens.Total, 10)
}

func dollarCell(c *accounting.Cell) string {
	switch {
	case c.Calls == 0:
		return "-"
	case c.Dollars == nil:
		return "not reported"
	case c.CallsWithCost < c.Calls:
		return fmt.Sprintf("%s (%d/%d)", c.Dollars, c.CallsWithCost, c.Calls)
	}
	return c.Dollars.String()
}

func costPlan(ctx context.Context, c *client, plan string, asJSON bool) error {
	var p accounting.PlanSpend
	if printed, err := c.answer(ctx, "GET", "/v1/plans/"+url.PathEscape(plan)+"/spend", nil, asJSON, &p); err != nil || printed {
		return err
	}
	printPlanSpend(stdout, &p, "")
	return nil
}

// printPlanSpend writes where a plan stands, each line after indent:
// metered, subscription and unknown apart, then the ceiling (metered
// dollars) and the loop cap (every call), which an org admin's answer
// alone carries.
func printPlanSpend(w io.Writer, p *accounting.PlanSpend, indent string) {
	fmt.Fprintf(w, "%splan      %s (org %s)\n%scalls     %d (metered %d, subscription %d, unknown %d)\n", indent, p.PlanID, p.Org,
		indent, p.Calls, p.Spend.Metered.Calls, p.Spend.Subscription.Calls, p.Spend.Unknown.Calls)
	fmt.Fprintf(w, "%stokens    metered %d, subscription %d, unknown %d\n", indent, p.TokenSpent, p.TokenSpentSubscription, p.TokenSpentUnknown)
	fmt.Fprintf(w, "%sdollars   metered %s, subscription %s, unknown %s (as reported)\n", indent, dollarCell(&p.Spend.Metered),
		dollarCell(&p.Spend.Subscription), dollarCell(&p.Spend.Unknown))
	if p.Member != "" || p.Ceiling == nil || p.LoopCap == nil {
		fmt.Fprintf(w, "%smember    %s's calls only; the plan's budget is shown to org admins\n", indent, p.Member)
		return
	}
	fmt.Fprintf(w, "%sceiling   %s\n", indent, ceilingLine(p.Ceiling))
	fmt.Fprintf(w, "%sloop cap  %s\n", indent, loopLine(p.LoopCap))
}

// loopLine says where a plan stands against its loop cap.
func loopLine(l *accounting.LoopCap) string {
	if l.Cap == nil {
		return "none"
	}
	return fmt.Sprintf("%d calls of %d, %d left, reached: %v", l.Calls, *l.Cap, *l.Remaining, l.Reached)
}

// ceilingLine says where a plan stands against its dollar ceiling; spend
// nobody reported is said to be unknown, never $0.
func ceilingLine(c *accounting.Ceiling) string {
	if c.Dollars == nil {
		return "none"
	}
	var line string
	if c.Spent == nil || c.Remaining == nil || c.Reached == nil {
		line = fmt.Sprintf("not reported of %s metered, left and reached unknown", c.Dollars)
	} else {
		line = fmt.Sprintf("%s metered of %s, %s left, reached: %v", c.Spent, c.Dollars, c.Remaining, *c.Reached)
	}
	if c.Note != "" {
		line += " (" + c.Note + ")"
	}
	return line
}

// parseInterspersed parses flags wherever they stand among the positional
// arguments (spine cost --json plan p1 --url …) and returns the positional
// ones; everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}
