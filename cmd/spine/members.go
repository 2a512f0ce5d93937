package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spinehq/spine/members"
	"github.com/spinehq/spine/server"
)

const membersUsage = "usage: spine members map KIND VALUE MEMBER | unmap KIND VALUE | mapped | unmapped  [--json] [--limit N] [--after KIND:VALUE]\n" +
	"  KIND is email (user.email), account (user.account_uuid, user.account_id) or user (user.id);\n" +
	"  an org ingest token records each app event as the member its identity is mapped to (an org admin's token)"

// runMembers maps the apps' telemetry identities to members, for an org's
// ingest token (docs/telemetry.md#identity).
func runMembers(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("members", flag.ContinueOnError)
	base := fs.String("url", "", "spine HTTP API (default $SPINE_URL or http://127.0.0.1:7070)")
	token := fs.String("token", "", "an org admin's bearer token (default $SPINE_TOKEN)")
	asJSON := fs.Bool("json", false, "print JSON")
	limit := fs.Int("limit", 0, "mapped, unmapped: at most this many (1 to 5000; default 500)")
	after := fs.String("after", "", "mapped, unmapped: start after this identity, the previous page's next (KIND:VALUE)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), membersUsage)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	want := map[string]int{"map": 4, "unmap": 3, "mapped": 1, "unmapped": 1}
	if len(pos) == 0 || want[pos[0]] != len(pos) {
		fs.Usage()
		return usageError{membersUsage}
	}
	c, err := newClient(*base, *token)
	if err != nil {
		return err
	}
	switch pos[0] {
	case "map":
		return mapIdentity(ctx, c, pos[1], pos[2], pos[3], *asJSON)
	case "unmap":
		return unmapIdentity(ctx, c, pos[1], pos[2], *asJSON)
	}
	q := url.Values{}
	if *limit != 0 {
		q.Set("limit", strconv.Itoa(*limit))
	}
	if *after != "" {
		q.Set("after", *after)
	}
	if pos[0] == "mapped" {
		return listMapped(ctx, c, q, *asJSON)
	}
	return listUnmapped(ctx, c, q, *asJSON)
}

func mapIdentity(ctx context.Context, c *client, kind, value, member string, asJSON bool) error {
	body, _ := json.Marshal(server.MapRequest{Kind: kind, Value: value, Member: member})
	var m members.Mapping
	if printed, err := c.answer(ctx, "POST", "/v1/members/identities", body, asJSON, &m); err != nil || printed {
		return err
	}
	fmt.Fprintf(stdout, "mapped %s %s to member %s: its events record as %s from now on\n", shown(m.Kind), shown(m.Value),
		shown(m.Member), shown(m.Member))
	return nil
}

func unmapIdentity(ctx context.Context, c *client, kind, value string, asJSON bool) error {
	q := url.Values{"kind": {kind}, "value": {value}}
	var id members.Identity
	if printed, err := c.answer(ctx, "DELETE", "/v1/members/identities?"+q.Encode(), nil, asJSON, &id); err != nil || printed {
		return err
	}
	fmt.Fprintf(stdout, "unmapped %s %s: its events are not recorded until it is mapped again\n", shown(id.Kind), shown(id.Value))
	return nil
}

func listMapped(ctx context.Context, c *client, q url.Values, asJSON bool) error {
	var page server.IdentityList
	if printed, err := c.answer(ctx, "GET", "/v1/members/identities?"+q.Encode(), nil, asJSON, &page); err != nil || printed {
		return err
	}
	if len(page.Identities) == 0 {
		fmt.Fprintln(stdout, "no identities mapped")
		return nil
	}
	rows := [][]string{{"KIND", "VALUE", "MEMBER", "MAPPED BY", "MAPPED AT"}}
	for _, m := range page.Identities {
		rows = append(rows, []string{m.Kind, m.Value, m.Member, m.MappedBy, m.MappedAt.UTC().Format(time.RFC3339)})
	}
	printIdentities(rows)
	printMore(page.More, page.Next)
	return nil
}

func listUnmapped(ctx context.Context, c *client, q url.Values, asJSON bool) error {
	var page server.UnmappedList
	if printed, err := c.answer(ctx, "GET", "/v1/members/unmapped?"+q.Encode(), nil, asJSON, &page); err != nil || printed {
		return err
	}
	if len(page.Unmapped) == 0 {
		fmt.Fprintln(stdout, "no unmapped identities")
		return nil
	}
	rows := [][]string{{"KIND", "VALUE", "EVENTS", "FIRST SEEN", "LAST SEEN"}}
	noUser := false
	for _, u := range page.Unmapped {
		rows = append(rows, []string{u.Kind, u.Value, strconv.FormatInt(u.Events, 10), u.FirstSeen.UTC().Format(time.RFC3339),
			u.LastSeen.UTC().Format(time.RFC3339)})
		noUser = noUser || !slices.Contains(members.Kinds, u.Kind)
	}
	printIdentities(rows)
	fmt.Fprintln(stdout, "these events were not recorded; spine members map KIND VALUE MEMBER records the next ones")
	if noUser {
		fmt.Fprintln(stdout, "machine and none: events that named no user, of a session no member holds; nothing maps them: "+
			"a member's token records them (docs/telemetry.md#who-the-caller-is)")
	}
	printMore(page.More, page.Next)
	return nil
}

// printIdentities prints a page of identities as a table, each cell as a
// terminal may show it (shown: anyone with the ingest token sets the
// values), in one line.
func printIdentities(rows [][]string) {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		for i, cell := range row {
			row[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(shown(cell))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
}

func printMore(more bool, next string) {
	if more {
		fmt.Fprintf(stdout, "more follow: --after %s\n", shown(next))
	}
}
