package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"strconv"
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
	groupBy := fs.String("group-by", "day", "day, week, month, app, model, billing, member or plan")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spine cost [flags]          your org's router calls: calls, tokens and reported dollars,\n"+
			"                                   metered, subscription and unknown billing apart\n"+
			"       spine cost plan ID [flags]  where a plan stands against its dollar ceiling and loop cap")
		fs.PrintDefaults()
	}
	var plan string
	if len(args) > 0 && args[0] == "plan" {
		if len(args) < 2 {
			fs.Usage()
			return usageError{"cost plan needs a plan ID"}
		}
		plan, args = args[1], args[2:]
	}
	if err := fs.Parse(args); err != nil {
		return err
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
	var raw json.RawMessage
	if err := c.do(ctx, "GET", "/v1/cost/summary?"+q.Encode(), nil, &raw); err != nil {
		return err
	}
	if *asJSON {
		_, err := stdout.Write(raw)
		return err
	}
	var s accounting.Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	printCostSummary(&s)
	return nil
}

func printCostSummary(s *accounting.Summary) {
	fmt.Fprintf(stdout, "org %s, calls that ended %s to %s, by %s\n\n", s.Org, s.From.Format("2006-01-02 15:04"),
		s.To.Format("2006-01-02 15:04"), s.GroupBy)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, s.GroupBy+"\t")
	for _, b := range accounting.BillingClasses {
		fmt.Fprintf(tw, "%s calls\ttokens\treported $\t", b)
	}
	fmt.Fprintln(tw)
	for _, r := range append(s.Rows, s.Total) {
		key := r.Key
		if key == "" {
			key = "(none)"
		}
		fmt.Fprint(tw, key+"\t")
		for _, b := range accounting.BillingClasses {
			c := r.Cell(b)
			fmt.Fprintf(tw, "%d\t%s\t%s\t", c.Calls, tokenCell(c), dollarCell(c))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	fmt.Fprintln(stdout, "\n\"not reported\": no app reported it (unknown, not $0); \"(n/m)\": n of m calls reported.")
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
	var raw json.RawMessage
	if err := c.do(ctx, "GET", "/v1/plans/"+url.PathEscape(plan)+"/spend", nil, &raw); err != nil {
		return err
	}
	if asJSON {
		_, err := stdout.Write(raw)
		return err
	}
	var p accounting.PlanSpend
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "plan      %s (org %s)\ncalls     %d (metered %d, subscription %d, unknown %d)\n", p.PlanID, p.Org,
		p.Calls, p.Spend.Metered.Calls, p.Spend.Subscription.Calls, p.Spend.Unknown.Calls)
	fmt.Fprintf(stdout, "tokens    metered %d, subscription %d, unknown %d\n", p.TokenSpent, p.TokenSpentSubscription, p.TokenSpentUnknown)
	fmt.Fprintf(stdout, "dollars   metered %s, subscription %s, unknown %s (as reported)\n", dollarCell(&p.Spend.Metered),
		dollarCell(&p.Spend.Subscription), dollarCell(&p.Spend.Unknown))
	ceiling := "none"
	if d := p.Ceiling.Dollars; d != nil {
		ceiling = fmt.Sprintf("%s metered of %s, %s left, reached: %v", p.Ceiling.Spent, d, p.Ceiling.Remaining, p.Ceiling.Reached)
		if n := p.Ceiling.MeteredCallsWithoutCost; n > 0 {
			ceiling += fmt.Sprintf(" (%d metered calls reported no cost: spend is a lower bound)", n)
		}
	}
	loop := "none"
	if l := p.LoopCap; l.Cap != nil {
		loop = fmt.Sprintf("%d calls of %d, %d left, reached: %v", l.Calls, *l.Cap, *l.Remaining, l.Reached)
	}
	fmt.Fprintf(stdout, "ceiling   %s\nloop cap  %s\n", ceiling, loop)
	return nil
}
