package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spinehq/spine/apps"
	"github.com/spinehq/spine/node"
)

// CcusageVersion is the ccusage `make ccusage-parity` installs (its native
// linux-x64 binary ships with 20.0.24, not 20.0.26).
const CcusageVersion = "20.0.24"

// DefaultReportRuns is how many times each report is timed.
const DefaultReportRuns = 3

// ImportReports is the per-session and per-day cost reports answered from
// spine's projections after the node phase, each beside ccusage's own
// report scanning the same transcript and rollout files.
type ImportReports struct {
	Calls int64 `json:"calls"` // router_calls rows: one per imported session
	Runs  int   `json:"runs"`  // each report is timed this many times; figures are medians
	// Session is GET /v1/cost/summary?groupBy=session, every session,
	// beside `ccusage session --json --offline`; Day is groupBy=day beside
	// `ccusage daily --json --offline`. Both span the calls' first to last
	// second (RFC 3339), so their first and last days are partial.
	Session ReportTiming `json:"session"`
	Day     ReportTiming `json:"day"`
	// DayWholeDays is groupBy=day with from and to as dates, as a user
	// types them (whole UTC days: read from the daily rollup), beside
	// ccusage daily; SessionPage is the first page of groupBy=session
	// (limit=100) over the same days, beside ccusage session.
	DayWholeDays ReportTiming `json:"dayWholeDays"`
	SessionPage  ReportTiming `json:"sessionPage"`
	// CcusageFiles and CcusageBytes are what ccusage read: the lines of
	// the node phase's Claude transcript and Codex rollout files (it reads
	// neither stream-json nor exec output), one file per session as Claude
	// Code and Codex keep them. Spine's reports cover every format's
	// sessions.
	CcusageFiles   int    `json:"ccusageFiles"`
	CcusageBytes   int64  `json:"ccusageBytes"`
	CcusageVersion string `json:"ccusageVersion,omitempty"`
	// Analyzed are the tables whose planner statistics were stale when the
	// import ended, refreshed before the reports are timed: a node does so
	// within 30 s (node.AnalyzeStale; autovacuum where it runs), so the
	// reports are timed as a running node answers them. Without statistics
	// a page of groupBy=session reads the whole window (16 ms here).
	Analyzed []string `json:"analyzed,omitempty"`
	// CcusageReason says why the ccusage figures are null.
	CcusageReason string `json:"ccusageReason,omitempty"`
}

// ReportTiming is one report from spine and from ccusage.
type ReportTiming struct {
	Query         string   `json:"query"` // spine's request
	Rows          int      `json:"rows"`
	ResponseBytes int      `json:"responseBytes"`
	FirstMs       float64  `json:"firstMs"`  // the first request
	MedianMs      float64  `json:"medianMs"` // over Runs
	Ccusage       string   `json:"ccusage"`  // ccusage's command
	CcusageRows   *int     `json:"ccusageRows"`
	CcusageMs     *float64 `json:"ccusageMs"` // median wall time of the whole process
	// Ratio is CcusageMs over MedianMs: how many times faster spine answers.
	Ratio *float64 `json:"ratio"`
}

// reports times the cost reports on tb's node once the accounting
// projector has a call for every recorded session, then ccusage on files.
func reports(ctx context.Context, cfg ImportConfig, tb *testbed, recorded int64, files []string) (*ImportReports, error) {
	r := &ImportReports{Runs: cfg.ReportRuns}
	if err := waitForCalls(ctx, tb, recorded); err != nil {
		return nil, err
	}
	analyzed, err := node.AnalyzeStale(ctx, tb.node.Pool)
	if err != nil {
		return nil, err
	}
	r.Analyzed = analyzed
	var first, last time.Time
	err = tb.node.Pool.QueryRow(ctx, `SELECT count(*), coalesce(min(at), now()), coalesce(max(at), now()) FROM router_calls`).
		Scan(&r.Calls, &first, &last)
	if err != nil {
		return nil, fmt.Errorf("router calls: %w", err)
	}
	token, err := tb.node.DevToken()
	if err != nil {
		return nil, err
	}
	seconds := url.Values{"from": {first.UTC().Truncate(time.Second).Format(time.RFC3339)},
		"to": {last.UTC().Truncate(time.Second).Add(time.Second).Format(time.RFC3339)}}
	days := url.Values{"from": {first.UTC().Format(time.DateOnly)}, "to": {last.UTC().Format(time.DateOnly)}}
	base := "http://" + tb.node.HTTPAddr() + "/v1/cost/summary?"
	for _, rep := range r.timings() {
		w := seconds
		if rep.wholeDays {
			w = days
		}
		q := url.Values{"groupBy": {rep.groupBy}, "from": w["from"], "to": w["to"]}
		if rep.limit > 0 {
			q.Set("limit", strconv.Itoa(rep.limit))
		}
		rep.t.Query = "/v1/cost/summary?" + q.Encode()
		rep.t.Ccusage = "ccusage " + rep.ccusage + " --json --offline"
		if err := timeSpineReport(ctx, rep.t, base+q.Encode(), token, r.Runs); err != nil {
			return nil, err
		}
	}
	return r, ccusageReports(ctx, cfg, r, files)
}

// reportTiming is one report the bench times and the ccusage command it
// is set beside.
type reportTiming struct {
	t         *ReportTiming
	groupBy   string
	wholeDays bool // from and to as dates; else the calls' first and last second
	limit     int  // 0: every row
	ccusage   string
}

func (r *ImportReports) timings() []reportTiming {
	return []reportTiming{{t: &r.Session, groupBy: "session", ccusage: "session"},
		{t: &r.Day, groupBy: "day", ccusage: "daily"},
		{t: &r.DayWholeDays, groupBy: "day", wholeDays: true, ccusage: "daily"},
		{t: &r.SessionPage, groupBy: "session", wholeDays: true, limit: 100, ccusage: "session"}}
}

// waitForCalls waits until the accounting projector has written a router
// call for each of the recorded sessions.
func waitForCalls(ctx context.Context, tb *testbed, want int64) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(stallTimeout)
	for {
		var n int64
		if err := tb.node.Pool.QueryRow(ctx, `SELECT count(*) FROM router_calls`).Scan(&n); err != nil {
			return fmt.Errorf("router calls: %w", err)
		}
		if n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("accounting wrote %d router calls of %d in %s", n, want, stallTimeout)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// timeSpineReport GETs the report runs times, reading the whole body each
// time; rows and size are the last answer's.
func timeSpineReport(ctx context.Context, t *ReportTiming, u, token string, runs int) error {
	var times []time.Duration
	var body []byte
	for range runs {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("cost report: %w", err)
		}
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		times = append(times, time.Since(start))
		if err != nil {
			return fmt.Errorf("cost report: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("cost report %s: %s: %s", u, resp.Status, body)
		}
	}
	var s struct {
		Rows []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return fmt.Errorf("cost report: %w", err)
	}
	t.Rows, t.ResponseBytes = len(s.Rows), len(body)
	t.FirstMs, t.MedianMs = ms(times[0]), ms(median(times))
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// findCcusage is cfg.Ccusage, $SPINE_CCUSAGE, the copy `make
// ccusage-parity` installs under bin/, or ccusage on PATH.
func findCcusage(cfg ImportConfig) (string, error) {
	if cfg.Ccusage != "" {
		return cfg.Ccusage, nil
	}
	if p := os.Getenv("SPINE_CCUSAGE"); p != "" {
		return p, nil
	}
	wd, _ := os.Getwd()
	if root, ok := moduleRoot(wd); ok {
		p := filepath.Join(root, "bin", "ccusage-"+CcusageVersion, "node_modules", ".bin", "ccusage")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("ccusage")
	if err != nil {
		return "", errors.New("ccusage is not installed: `make ccusage-parity` installs ccusage@" + CcusageVersion +
			" under bin/ (or set SPINE_CCUSAGE or --ccusage)")
	}
	return p, nil
}

// ccusageReports lays the transcript and rollout files out as Claude Code
// and Codex keep them (hard links, or copies) and times ccusage's session
// and daily reports on them. Without ccusage the figures stay null and
// CcusageReason says why; a ccusage that fails is reported the same way.
func ccusageReports(ctx context.Context, cfg ImportConfig, r *ImportReports, files []string) error {
	bin, err := findCcusage(cfg)
	if err != nil {
		r.CcusageReason = err.Error()
		return nil
	}
	root, err := os.MkdirTemp("", "spine-bench-ccusage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	claude, codex := filepath.Join(root, "claude"), filepath.Join(root, "codex")
	projects, sessions := filepath.Join(claude, "projects", "spine-bench"), filepath.Join(codex, "sessions", "2026", "01", "01")
	for _, f := range files {
		var n int
		var size int64
		switch {
		case strings.Contains(filepath.Base(f), string(apps.FormatClaudeTranscript)):
			n, size, err = splitSessions(f, projects, apps.FormatClaudeTranscript)
		case strings.Contains(filepath.Base(f), string(apps.FormatCodexRollout)):
			n, size, err = splitSessions(f, sessions, apps.FormatCodexRollout)
		default:
			continue
		}
		if err != nil {
			return err
		}
		r.CcusageFiles += n
		r.CcusageBytes += size
	}
	if r.CcusageFiles == 0 {
		r.CcusageReason = "no Claude transcript or Codex rollout in the node phase: ccusage reads no other format"
		return nil
	}
	run := func(args ...string) ([]byte, time.Duration, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "HOME="+root, "XDG_CONFIG_HOME="+filepath.Join(root, ".config"),
			"CLAUDE_CONFIG_DIR="+claude, "CODEX_HOME="+codex, "TZ=UTC", "NO_COLOR=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if err != nil {
			return nil, d, fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return out, d, nil
	}
	fail := func(reason string) error {
		r.CcusageReason = reason
		for _, rep := range r.timings() {
			rep.t.CcusageMs, rep.t.Ratio, rep.t.CcusageRows = nil, nil, nil
		}
		return nil
	}
	v, _, err := run("--version")
	if err != nil {
		return fail(err.Error())
	}
	r.CcusageVersion = strings.TrimSpace(string(v))
	for _, cmd := range []string{"session", "daily"} { // also the keys of ccusage 20.0.24's all-agent reports
		var times []time.Duration
		var out []byte
		for range r.Runs {
			o, d, err := run(cmd, "--json", "--offline")
			if err != nil {
				return fail(err.Error())
			}
			out, times = o, append(times, d)
		}
		var fields map[string]json.RawMessage
		var list []json.RawMessage
		if err := json.Unmarshal(out, &fields); err != nil || json.Unmarshal(fields[cmd], &list) != nil {
			return fail(fmt.Sprintf("ccusage %s printed no %q list: %.200s", cmd, cmd, out))
		}
		n, m := len(list), ms(median(times))
		for _, rep := range r.timings() {
			if rep.ccusage != cmd {
				continue
			}
			rep.t.CcusageRows, rep.t.CcusageMs = &n, &m
			if rep.t.MedianMs > 0 {
				ratio := round(m / rep.t.MedianMs)
				rep.t.Ratio = &ratio
			}
		}
	}
	return nil
}

// splitSessions writes the lines of a corpus file into dir, one file per
// session as the app keeps them: a transcript line goes to the file named
// by its sessionId (a line without one to the current file), a rollout
// starts a new file at each session_meta line.
func splitSessions(path, dir string, f apps.Format) (files int, size int64, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	in, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	var out *os.File
	var w *bufio.Writer
	closeOut := func() error {
		if out == nil {
			return nil
		}
		err := errors.Join(w.Flush(), out.Close())
		out = nil
		return err
	}
	defer func() { err = errors.Join(err, closeOut()) }()
	current, seen := "", map[string]bool{}
	br := bufio.NewReaderSize(in, 1<<20)
	for {
		line, rerr := br.ReadBytes('\n')
		if len(line) > 0 {
			var v struct {
				SessionID string `json:"sessionId"`
				Type      string `json:"type"`
			}
			_ = json.Unmarshal(line, &v)
			name := current
			switch {
			case f == apps.FormatClaudeTranscript && v.SessionID != "":
				name = v.SessionID + ".jsonl"
			case f == apps.FormatCodexRollout && v.Type == "session_meta":
				name = fmt.Sprintf("rollout-2026-01-01T00-00-00-%06d.jsonl", files)
			}
			if name == "" {
				name = "spine-bench-first.jsonl"
			}
			if name != current || out == nil {
				if err := closeOut(); err != nil {
					return files, size, err
				}
				if !seen[name] {
					seen[name] = true
					files++
				}
				if out, err = os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
					return files, size, err
				}
				w, current = bufio.NewWriter(out), name
			}
			if _, err := w.Write(line); err != nil {
				return files, size, err
			}
			size += int64(len(line))
		}
		if errors.Is(rerr, io.EOF) {
			return files, size, nil
		}
		if rerr != nil {
			return files, size, rerr
		}
	}
}
