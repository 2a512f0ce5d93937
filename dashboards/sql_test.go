package dashboards_test

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/pgtest"
)

// fieldConfig is the part of a panel's field config that says how a NULL
// cell reads.
type fieldConfig struct {
	Defaults struct {
		Mappings []mapping `json:"mappings"`
	} `json:"defaults"`
	Overrides []struct {
		Matcher struct {
			ID      string `json:"id"`
			Options string `json:"options"`
		} `json:"matcher"`
		Properties []struct {
			ID    string          `json:"id"`
			Value json.RawMessage `json:"value"`
		} `json:"properties"`
	} `json:"overrides"`
}

type mapping struct {
	Type    string `json:"type"`
	Options struct {
		Match  string `json:"match"`
		Result struct {
			Text string `json:"text"`
		} `json:"result"`
	} `json:"options"`
}

// nullText is what Grafana shows for a NULL in column: the special "null"
// value mapping of an override naming it, else of the defaults; "" (a
// blank cell) without one.
func nullText(t *testing.T, fc fieldConfig, column string) string {
	t.Helper()
	maps := fc.Defaults.Mappings
	for _, o := range fc.Overrides {
		if o.Matcher.ID != "byName" || o.Matcher.Options != column {
			continue
		}
		for _, p := range o.Properties {
			if p.ID == "mappings" {
				maps = nil
				if err := json.Unmarshal(p.Value, &maps); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, m := range maps {
		if m.Type == "special" && m.Options.Match == "null" {
			return m.Options.Result.Text
		}
	}
	return ""
}

// sqlTables are the dashboards' SQL table panels, by title, with their
// query and field config.
func sqlTables(t *testing.T) map[string]struct {
	SQL string
	FC  fieldConfig
} {
	t.Helper()
	out := map[string]struct {
		SQL string
		FC  fieldConfig
	}{}
	for _, d := range loadDashboards(t) {
		var raw struct {
			Panels []struct {
				Title       string      `json:"title"`
				Type        string      `json:"type"`
				FieldConfig fieldConfig `json:"fieldConfig"`
				Targets     []target    `json:"targets"`
			} `json:"panels"`
		}
		data, err := os.ReadFile(d.file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &raw); err != nil {
			t.Fatal(err)
		}
		for _, p := range raw.Panels {
			if p.Type == "table" && len(p.Targets) == 1 && p.Targets[0].RawSQL != "" {
				out[p.Title] = struct {
					SQL string
					FC  fieldConfig
				}{p.Targets[0].RawSQL, p.FieldConfig}
			}
		}
	}
	return out
}

var alias = regexp.MustCompile(`(?i)\bAS (\w+)`)

// In every SQL table, a token or dollar cell nobody reported reads "not
// reported", never a blank; a missing limit reads "none".
func TestSQLTablesSayNotReported(t *testing.T) {
	tables := sqlTables(t)
	if len(tables) < 2 {
		t.Fatalf("SQL tables %v, want at least By member and Top plans", tables)
	}
	for title, tb := range tables {
		for _, m := range alias.FindAllStringSubmatch(tb.SQL, -1) {
			col, want := m[1], ""
			switch {
			case strings.HasSuffix(col, "_dollars") || strings.HasPrefix(col, "token_spent"):
				want = "not reported"
			case col == "dollar_ceiling" || col == "loop_cap":
				want = "none"
			default:
				continue
			}
			if got := nullText(t, tb.FC, col); got != want {
				t.Errorf("%s: a NULL %s reads %q, want %q", title, col, got, want)
			}
		}
	}
}

// Top plans, run against hand-written rows: metered, subscription and
// unknown apart; tokens or dollars nobody reported are NULL (shown as "not
// reported"), never 0; a billing class with no calls is 0.
func TestTopPlansKeepsSilence(t *testing.T) {
	pool, _ := pgtest.New(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO router_calls (session_id, org, member, app, plan_id, execution_surface, status,
			billing, usage, input_tokens, output_tokens, total_cost, started_at, at) VALUES
		('m1', 'acme', 'alice', 'codex', 'p', 'cockpit-app:codex', 'done', 'metered', NULL, NULL, NULL, NULL, '2026-11-02', '2026-11-02'),
		('u1', 'acme', 'alice', 'codex', 'p', 'cockpit-app:codex', 'done', 'unknown', '{}', 7, 3, NULL, '2026-11-02', '2026-11-02'),
		('u2', 'acme', 'alice', 'codex', 'p', 'cockpit-app:codex', 'disconnected', 'unknown', NULL, NULL, NULL, 0.25, '2026-11-02', '2026-11-02')`)
	if err != nil {
		t.Fatal(err)
	}
	tb, ok := sqlTables(t)["Top plans"]
	if !ok {
		t.Fatal("no Top plans table")
	}
	var row map[string]any
	if err := pool.QueryRow(ctx, `SELECT to_jsonb(q) FROM (`+sqlOf(tb.SQL)+`) q`).Scan(&row); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"org": "acme", "plan": "p", "calls": 3.0,
		"metered_calls": 1.0, "token_spent": nil, "metered_dollars": nil,
		"subscription_calls": 0.0, "token_spent_subscription": 0.0, "subscription_dollars": 0.0,
		"unknown_calls": 2.0, "token_spent_unknown": 10.0, "unknown_dollars": 0.25,
		"calls_without_usage": 2.0, "calls_without_cost": 2.0, "dollar_ceiling": nil, "loop_cap": nil}
	if !reflect.DeepEqual(row, want) {
		t.Fatalf("Top plans row\n got %v\nwant %v", row, want)
	}
}
