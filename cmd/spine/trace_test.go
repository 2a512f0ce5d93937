package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/trace"
)

// The quickstart's qs-1 (step-3 of plan-run-42, plan plan-42, subscription,
// usage and cost reported) and qs-2, the run's step-4, that ended without
// reporting usage, cost or billing.
const qs2 = `{"v":1,"type":"session.start","id":"qs-2-start","at":"2026-11-29T10:01:00Z","sessionId":"qs-2","app":"codex","kind":"run","owner":{"org":"dev","member":"dev"},"planId":"plan-42","stepId":"step-4","parentRunId":"plan-run-42"}
{"v":1,"type":"session.end","id":"qs-2-end","at":"2026-11-29T10:01:30Z","sessionId":"qs-2","status":"failed","exitCode":1}
`

func planTraceNode(t *testing.T) {
	t.Helper()
	_, caughtUp := testNode(t)
	extra := filepath.Join(t.TempDir(), "qs-2.jsonl")
	if err := os.WriteFile(extra, []byte(qs2), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"../../testdata/quickstart/live.jsonl", "../../testdata/quickstart/end.jsonl", extra} {
		if out, err := capture(t, "publish", f); err != nil {
			t.Fatalf("publish %s: %v %s", f, err, out)
		}
	}
	caughtUp()
}

// spine trace PLAN_RUN prints the plan from the top down as text: each
// step, the sessions it ran, each router call as lines (billing and its
// signal, served model, tokens by kind, cost or "not reported"), then the
// spend. No raw JSON unless --json.
func TestTracePlanCommand(t *testing.T) {
	planTraceNode(t)
	out, err := capture(t, "trace", "plan-run-42")
	if err != nil {
		t.Fatalf("trace plan-run-42: %v\n%s", err, out)
	}
	inOrder(t, out,
		"plan-run-42  plan plan-42; 1 run, 2 steps, 2 sessions\n",
		"└─ run plan-run-42  plan plan-42\n",
		"   ├─ step step-3\n",
		"   │  └─ session qs-1  done  claude-code run on laptop-dev, model claude-opus-4-5-20251101, effort not reported\n",
		"   │        run run-qs-1: 3 steps recorded; started 2026-11-29 10:00:00Z, ended 2026-11-29 10:00:08Z\n",
		"   │        router call: billing subscription (signal subscription), door session, status done\n",
		"   │          served model claude-opus-4-5-20251101, effort not reported\n",
		"   │          tokens input 42339 (cache read 17254, cache write 25067), output 424 (reasoning 0), total 42763\n",
		"   │          cost $0.24722425 (as reported)\n",
		"   └─ step step-4\n",
		"      └─ session qs-2  failed  codex run, model not reported, effort not reported\n",
		"           router call: billing unknown (signal silent), door not reported, status failed\n",
		"             tokens not reported\n",
		"             cost not reported\n",
		"\nspend (metered, subscription and unknown apart;",
		"  plan      plan-42 (org dev)\n",
		"  calls     2 (metered 0, subscription 1, unknown 1)\n",
		"  tokens    metered 0, subscription 42763, unknown 0\n",
		"  member    dev's calls only; the plan's budget is shown to org admins\n")
	if strings.Contains(out, "{") {
		t.Errorf("raw JSON in the text:\n%s", out)
	}

	// A plan id traces the same plan; --json is the API's answer.
	if out, err := capture(t, "trace", "plan-42"); err != nil || !strings.HasPrefix(out, "plan-42  plan plan-42; 1 run, 2 steps, 2 sessions\n") {
		t.Errorf("trace plan-42: %v\n%s", err, out)
	}
	out, err = capture(t, "trace", "plan-run-42", "--json")
	var p trace.Plan
	if err != nil || json.Unmarshal([]byte(out), &p) != nil || p.Sessions != 2 || len(p.Spend) != 1 {
		t.Errorf("trace --json: %v\n%s", err, out)
	}
	// spine read steps of the plan run: the same tree, without the spend.
	out, err = capture(t, "read", "steps", "plan-run-42")
	if err != nil || !strings.HasPrefix(out, "run plan-run-42  plan plan-42\n├─ step step-3\n│  └─ session qs-1  done") ||
		strings.Contains(out, "spend") {
		t.Errorf("read steps plan-run-42: %v\n%s", err, out)
	}

	// Another member's token: the 404 of a plan that does not exist.
	signer, _ := auth.NewSigner([]byte(strings.Repeat("\xab", 32)))
	bob, _ := signer.Mint(auth.Claims{Org: "dev", Member: "bob"}, time.Hour)
	_, theirs := capture(t, "trace", "plan-run-42", "--token", bob)
	_, missing := capture(t, "trace", "plan-run-nope", "--token", bob)
	if theirs == nil || missing == nil || theirs.Error() != missing.Error() || !strings.Contains(theirs.Error(), "404") {
		t.Errorf("bob's trace of plan-run-42: %v; of a missing plan: %v", theirs, missing)
	}
}

// A session's and a file's trace print the router call as lines too.
func TestTraceRouterCallAsText(t *testing.T) {
	planTraceNode(t)
	out, err := capture(t, "trace", "qs-1")
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, out, "session qs-1  done  claude-code",
		"├─ router call: billing subscription (signal subscription), door session, status done\n",
		"│    served model claude-opus-4-5-20251101, effort not reported\n",
		"│    tokens input 42339 (cache read 17254, cache write 25067), output 424 (reasoning 0), total 42763\n",
		"│    cost $0.24722425 (as reported)\n",
		"└─ 2 artifacts\n")
	if strings.Contains(out, "{") {
		t.Errorf("raw JSON in the text:\n%s", out)
	}
	out, err = capture(t, "trace", "qs-2")
	if err != nil || !strings.Contains(out, "├─ router call: billing unknown (signal silent)") ||
		!strings.Contains(out, "│    tokens not reported\n│    cost not reported\n") {
		t.Errorf("trace qs-2: %v\n%s", err, out)
	}
	digest := "blake3:5d715c79097cf702676bfe1450e627a43f9d3a081d62155ad32b85320f189c01" // NOTES.md in end.jsonl
	out, err = capture(t, "trace", digest)
	if err != nil || !strings.Contains(out, "      router call: billing subscription (signal subscription), door session, status done\n") ||
		!strings.Contains(out, "        cost $0.24722425 (as reported)\n") || strings.Contains(out, "{") {
		t.Errorf("trace file: %v\n%s", err, out)
	}
}

// inOrder fails the test unless each part is in out, each after the last.
func inOrder(t *testing.T, out string, parts ...string) {
	t.Helper()
	rest := out
	for _, p := range parts {
		i := strings.Index(rest, p)
		if i < 0 {
			t.Fatalf("no %q (in order) in:\n%s", p, out)
		}
		rest = rest[i+len(p):]
	}
}

// spine trace writes a call's cost as the pages do (accounting.FormatCost:
// at least cents), and a model or effort the app never said as "not
// reported", the pages' words.
func TestRouterCallTextSaysDollarsAsThePages(t *testing.T) {
	var b strings.Builder
	cost := 0.5
	printRouterCall(&b, "", "", &accounting.Call{Billing: "metered", Status: "done", TotalCost: &cost})
	if !strings.Contains(b.String(), "  cost $0.50 (as reported)\n") || !strings.Contains(b.String(), "served model not reported, effort not reported\n") {
		t.Errorf("router call:\n%s", b.String())
	}
}
