package node_test

import (
	"regexp"
	"strings"
	"testing"
)

var stepRE = regexp.MustCompile(`data-step="([^"]*)"|data-session="([^"]*)"`)

// planTree is a plan page's steps and their sessions, as stepSessions
// writes a trace's ("step-1:p1a,p1c step-2:p1b").
func planTree(page string) string {
	var steps []string
	for _, m := range stepRE.FindAllStringSubmatch(page, -1) {
		if strings.HasPrefix(m[0], "data-step=") {
			steps = append(steps, m[1]+":")
			continue
		}
		if len(steps) == 0 {
			continue
		}
		last := &steps[len(steps)-1]
		if !strings.HasSuffix(*last, ":") {
			*last += ","
		}
		*last += m[2]
	}
	return strings.Join(steps, " ")
}

// A plan's page lists its steps and the sessions each ran (linked to their
// pages) with their router calls, and the plan's spend, subscription
// apart: a member's own calls, an admin's against the ceiling and loop
// cap. The provenance page answers a plan id with the same tree; another
// member's plan is the 404 page of a missing one.
func TestPlanPage(t *testing.T) {
	f := planFixture(t)
	alice, admin, carol := f.token("acme", "alice"), f.adminToken("acme", "alice"), f.token("acme", "carol")

	page := f.page(200, "/ui/plans/plan-run-42", alice)
	for _, want := range []string{`href="/ui/sessions/p1a">p1a</a>`, `data-run="plan-run-42"`, "alice's calls only",
		`<tr data-billing="subscription"><th scope="row">subscription</th><td class="num">1</td>`,
		"$0.25 (as reported)", "No router call yet: accounting writes it when the session ends.", "running",
		`aria-current="page"`} {
		if !strings.Contains(page, want) {
			t.Errorf("alice's plan-run-42 lacks %q", want)
		}
	}
	if got := planTree(page); got != "step-1:p1a,p1c step-2:p1b step-3:p1d" {
		t.Errorf("alice's plan-run-42 lists %q (bob's b1 must not show)", got)
	}
	if strings.Contains(page, "Dollar ceiling") || strings.Contains(page, "b1") {
		t.Errorf("a member's plan page shows the budget or bob's session:\n%s", page)
	}
	if trace := f.page(200, "/ui/provenance/plan-run-42", alice); planTree(trace) != planTree(page) {
		t.Errorf("the provenance page of plan-run-42 lists %q", planTree(trace))
	}

	org := f.page(200, "/ui/plans/plan-7", admin)
	for _, want := range []string{"Dollar ceiling: $5.00; metered dollars spent $0.75 (subscription spend does not count against it); $4.25 remaining; reached: false.",
		"Loop cap: 10 calls; 5 calls so far, of every billing class; 5 remaining.", `data-run="plan-run-43"`} {
		if !strings.Contains(org, want) {
			t.Errorf("the admin's plan-7 lacks %q", want)
		}
	}

	missing := f.page(404, "/ui/plans/plan-run-nope", carol)
	for _, id := range []string{"plan-run-42", "plan-7", "bad%00id"} {
		if theirs := f.page(404, "/ui/plans/"+id, carol); theirs != missing || !strings.Contains(theirs, "plan not found") {
			t.Errorf("carol's page of %s:\n%s\nmissing:\n%s", id, theirs, missing)
		}
	}
}
