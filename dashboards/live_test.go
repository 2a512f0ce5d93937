package dashboards_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/internal/pgtest"
)

// EnvCheck turns on the live check (make dashboards-check).
const EnvCheck = "SPINE_DASHBOARDS_CHECK"

const tokenSecret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// TestDashboardsLive runs spine (the real binary, fed the accounting
// fixtures) and Debian's Prometheus scraping it, then evaluates every
// PromQL expression of the dashboards through Prometheus's HTTP API and
// every SQL query against spine's database: each must succeed and return
// data.
func TestDashboardsLive(t *testing.T) {
	// It runs wherever Prometheus is installed (.ci/run installs it);
	// EnvCheck (make dashboards-check) makes a missing Prometheus a failure.
	promBin, err := exec.LookPath("prometheus")
	if err != nil && os.Getenv(EnvCheck) == "" {
		t.Skip("prometheus is not installed: make dashboards-check installs it and runs this check")
	}
	if err != nil {
		t.Fatal("prometheus is not installed: make dashboards-check installs it (apt-get install prometheus)")
	}
	began := time.Now()
	t.Cleanup(http.DefaultClient.CloseIdleConnections) // registered first: runs after spine and Prometheus stop
	pool, dbURL := pgtest.New(t)
	dir := t.TempDir()
	spineBin := filepath.Join(dir, "spine")
	run(t, "go", "build", "-o", spineBin, "../cmd/spine")
	httpAddr, natsAddr := freeAddr(t), freeAddr(t)
	base := "http://" + httpAddr
	serve := exec.Command(spineBin, "serve")
	serve.Env = append(os.Environ(), "SPINE_DATABASE_URL="+dbURL, "SPINE_DATA_DIR="+filepath.Join(dir, "data"),
		"SPINE_HTTP_ADDR="+httpAddr, "SPINE_NATS_LISTEN="+natsAddr, "SPINE_TOKEN_SECRET="+tokenSecret, "SPINE_NATS_URL=")
	serve.Stdout, serve.Stderr = io.Discard, logWriter{t, "spine"}
	stopWith(t, serve)
	waitUntil(t, "spine ready", func() bool { return get(base+"/readyz", "") == nil })

	// acme sets a budget and reads the org's whole cost: an admin's token.
	acme, dev := mint(t, "acme", "alice", auth.RoleAdmin), mint(t, "acme", "dave", auth.RoleMember)
	// spine publish --nats presents the embedded server's token from the
	// data dir it is pointed at.
	t.Setenv("SPINE_DATA_DIR", filepath.Join(dir, "data"))
	run(t, spineBin, "publish", "--nats", "nats://"+natsAddr, "../testdata/accounting/mixed.jsonl")
	cmd := exec.Command(spineBin, "publish", "--url", base, "--token", dev, "../testdata/accounting/http.jsonl")
	_ = cmd.Run() // one envelope in it is refused on purpose: the ingest metrics see a rejection
	req, _ := http.NewRequest("POST", base+"/v1/plans/p1/budget", strings.NewReader(`{"dollarCeiling": 2, "loopCap": 10}`))
	req.Header.Set("Authorization", "Bearer "+acme)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("set budget: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("set budget: %s", resp.Status)
	}
	waitUntil(t, "accounting caught up", func() bool {
		var s struct {
			Total map[string]json.RawMessage `json:"total"`
		}
		var spend struct {
			Ceiling struct{ Dollars *json.Number }
		}
		return getJSON(base+"/v1/cost/summary?from=2026-11-01&to=2026-11-30", acme, &s) == nil &&
			bytes.Contains(s.Total["metered"], []byte(`"calls":4`)) &&
			getJSON(base+"/v1/plans/p1/spend", acme, &spend) == nil && spend.Ceiling.Dollars != nil
	})

	// The CLI over the same spine: a table that keeps silence visible, and a plan.
	for args, want := range map[string]string{
		"cost --from 2026-11-01 --to 2026-11-30 --group-by billing": "1.01 (3/4)", // the fixtures: 3 of 4 metered calls priced
		"cost plan p1": "1.00 metered of 2, 1.00 left, reached: false",
	} {
		out, err := exec.Command(spineBin, append(strings.Fields(args), "--url", base, "--token", acme)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("spine %s: %v\n%s\nwant %q in it", args, err, out, want)
		}
	}

	promAddr := freeAddr(t)
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: spine\n    static_configs:\n      - targets: [%q]\n", httpAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := exec.Command(promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "prom"), "--web.listen-address="+promAddr)
	prom.Stdout, prom.Stderr = io.Discard, io.Discard
	stopWith(t, prom)
	promURL := "http://" + promAddr
	waitUntil(t, "five scrapes of spine", func() bool {
		res, err := promQuery(promURL, `count_over_time(up{job="spine"}[1m]) >= 5 and up{job="spine"} == 1`)
		return err == nil && len(res) > 0
	})

	checked := 0
	for _, d := range loadDashboards(t) {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				checked++
				what := fmt.Sprintf("%s / %s / %s", d.Title, p.Title, tg.RefID)
				if tg.Expr != "" {
					res, err := promQuery(promURL, promVars.Replace(tg.Expr))
					if err != nil {
						t.Errorf("%s: %v", what, err)
					} else if len(res) == 0 {
						t.Errorf("%s: no data for %s", what, tg.Expr)
					}
					continue
				}
				rows, err := pool.Query(context.Background(), sqlOf(tg.RawSQL))
				n := 0
				for err == nil && rows.Next() {
					n++
				}
				if err == nil {
					rows.Close()
					err = rows.Err()
				}
				if err != nil {
					t.Errorf("%s: %v", what, err)
				} else if n == 0 {
					t.Errorf("%s: no rows", what)
				}
			}
		}
	}
	t.Logf("checked %d dashboard queries against spine and Prometheus in %s", checked, time.Since(began).Round(time.Millisecond))
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// stopWith starts cmd and stops it (SIGTERM, then waits) when the test ends.
func stopWith(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitUntil polls an outside process (spine, Prometheus) that has no way
// to signal us, every 200ms for at most two minutes.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func mint(t *testing.T, org, member, role string) string {
	t.Helper()
	secret, _ := auth.DecodeSecret(tokenSecret)
	s, err := auth.NewSigner(secret)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Mint(auth.Claims{Org: org, Member: member, Role: role}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func get(u, token string) error { return getJSON(u, token, nil) }

func getJSON(u, token string, out any) error {
	req, _ := http.NewRequest("GET", u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %d %s", u, resp.StatusCode, body)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}

// promQuery runs an instant query; an error status is an error.
func promQuery(base, q string) ([]json.RawMessage, error) {
	var resp struct {
		Status, Error string
		Data          struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	err := getJSON(base+"/api/v1/query?query="+url.QueryEscape(q), "", &resp)
	if err != nil {
		return nil, err
	}
	if resp.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s", resp.Error)
	}
	return resp.Data.Result, nil
}

type logWriter struct {
	t    *testing.T
	name string
}

func (w logWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
			w.t.Logf("%s: %s", w.name, line)
		}
	}
	return len(p), nil
}
