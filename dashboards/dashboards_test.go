package dashboards_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/spinehq/spine/internal/spinetest"
)

func TestMain(m *testing.M) { spinetest.Main(m) }

type target struct {
	RefID      string `json:"refId"`
	Expr       string `json:"expr"`
	RawSQL     string `json:"rawSql"`
	Datasource struct {
		Type, UID string
	} `json:"datasource"`
}

type panel struct {
	ID      int      `json:"id"`
	Title   string   `json:"title"`
	Targets []target `json:"targets"`
}

type dashboard struct {
	UID, Title string
	Panels     []panel `json:"panels"`
	file       string
}

func loadDashboards(t *testing.T) []dashboard {
	t.Helper()
	files, _ := filepath.Glob("grafana/dashboards/*.json")
	if len(files) != 2 {
		t.Fatalf("dashboards %v, want agent-cost and ingestion-health", files)
	}
	var out []dashboard
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		d.file = f
		out = append(out, d)
	}
	return out
}

func datasourceUIDs(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("grafana/provisioning/datasources/spine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Datasources []struct{ UID, Type string } `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range doc.Datasources {
		out[d.UID] = d.Type
	}
	return out
}

// Every panel has a query, on a data source the provisioning defines.
func TestDashboardsAreWellFormed(t *testing.T) {
	uids := datasourceUIDs(t)
	titles := map[string]bool{}
	for _, d := range loadDashboards(t) {
		titles[d.Title] = true
		ids := map[int]bool{}
		for _, p := range d.Panels {
			if ids[p.ID] {
				t.Errorf("%s: panel id %d twice", d.file, p.ID)
			}
			ids[p.ID] = true
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", d.file, p.Title)
			}
			for _, tg := range p.Targets {
				typ, ok := uids[tg.Datasource.UID]
				switch {
				case !ok || typ != tg.Datasource.Type:
					t.Errorf("%s: panel %q uses data source %s (%s), not provisioned", d.file, p.Title, tg.Datasource.UID, tg.Datasource.Type)
				case typ == "prometheus" && tg.Expr == "":
					t.Errorf("%s: panel %q has no expr", d.file, p.Title)
				case typ != "prometheus" && tg.RawSQL == "":
					t.Errorf("%s: panel %q has no rawSql", d.file, p.Title)
				}
			}
		}
	}
	if !titles["Agent cost"] || !titles["Ingestion health"] {
		t.Fatalf("dashboard titles %v", titles)
	}
}

// Grafana's variables, as the live check fills them in.
var promVars = strings.NewReplacer("$__rate_interval", "1m", "$__range", "10m", "$__interval", "15s")

var timeFilter = regexp.MustCompile(`\$__timeFilter\(([^)]+)\)`)

// sqlOf fills in Grafana's macros: the time filter covers everything.
func sqlOf(raw string) string {
	return timeFilter.ReplaceAllString(raw, "$1 BETWEEN '2000-01-01T00:00:00Z' AND '2100-01-01T00:00:00Z'")
}
