package desktop_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/desktop"
)

// Another member's session is unknown_session, byte for byte the answer
// for one that never existed; another member's runner cannot see or take
// the task.
func TestCrossMemberIsByteIdentical404(t *testing.T) {
	e := newEnv(t)
	alice, bob := e.member("acme", "alice"), e.member("acme", "bob")
	r := e.runner(alice, "laptop", "laptop")
	sess := e.create(alice, map[string]any{"target": "desktop", "instructions": "secret plan"})
	bobRunner := e.runner(bob, "bob-laptop", "bob-laptop")
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/remote-sessions/%s"},
		{"POST", "/v1/remote-sessions/%s/messages"},
		{"POST", "/v1/remote-sessions/%s/cancel"},
	} {
		body := map[string]string{"prompt": "hi"}
		theirs, theirsBody := e.do(c.method, strings.Replace(c.path, "%s", sess.ID, 1), bob, body)
		missing, missingBody := e.do(c.method, strings.Replace(c.path, "%s", "rs-doesnotexist", 1), bob, body)
		if theirs != 404 || missing != 404 || !bytes.Equal(theirsBody, missingBody) ||
			!bytes.Contains(theirsBody, []byte(`"code":"unknown_session"`)) {
			t.Fatalf("%s %s: theirs %d %s, missing %d %s", c.method, c.path, theirs, theirsBody, missing, missingBody)
		}
	}
	if list := decode[desktop.ListResult](t, e.must(200, "GET", "/v1/remote-sessions", bob, nil)); len(list.Sessions) != 0 {
		t.Fatalf("bob lists alice's sessions: %+v", list)
	}
	if w := bobRunner.work(); len(w) != 0 {
		t.Fatalf("bob's runner sees alice's work: %+v", w)
	}
	code, theirs := bobRunner.post(sess.LatestTaskID, "claim", nil)
	_, missing := bobRunner.post("dt-doesnotexist", "claim", nil)
	if code != 404 || !bytes.Equal(theirs, missing) {
		t.Fatalf("bob's runner claims alice's task: %d %s (missing: %s)", code, theirs, missing)
	}
	r.claim(sess.LatestTaskID)
}

// Runner tokens open runner routes only, member tokens member routes only;
// a revoked runner token opens nothing; runner ids are not shared.
func TestTokenAudiences(t *testing.T) {
	e := newEnv(t)
	alice := e.member("acme", "alice")
	r := e.runner(alice, "laptop", "laptop")
	for _, path := range []string{"/v1/remote-sessions", "/v1/desktop-runner/tokens"} {
		if code, body := e.do("GET", path, r.token, nil); code != 401 {
			t.Fatalf("runner token on member route %s = %d %s", path, code, body)
		}
	}
	if code, body := e.do("POST", "/v1/desktop-runner/tokens", r.token, map[string]string{"runnerId": "x"}); code != 401 {
		t.Fatalf("runner token minting runner tokens = %d %s", code, body)
	}
	for _, path := range []string{"/v1/desktop-runner/work", "/v1/desktop-runner/events"} {
		if code, body := e.do("GET", path, alice, nil); code != 401 {
			t.Fatalf("member token on runner route %s = %d %s", path, code, body)
		}
	}
	// A runner token signed right but never minted through the route is refused.
	forged, _ := e.signer.Mint(auth.Claims{Org: "acme", Member: "alice", Audience: desktop.AudienceRunner}, time.Hour)
	if code, _ := e.do("GET", "/v1/desktop-runner/work", forged, nil); code != 401 {
		t.Fatalf("unminted runner token = %d", code)
	}
	toks := decode[struct{ Tokens []desktop.RunnerToken }](t, e.must(200, "GET", "/v1/desktop-runner/tokens", alice, nil)).Tokens
	if len(toks) != 1 || toks[0].Token != "" || toks[0].RunnerID != "laptop" || toks[0].ExpiresAt.Sub(toks[0].CreatedAt) != 12*time.Hour {
		t.Fatalf("tokens = %+v", toks)
	}
	e.must(204, "DELETE", "/v1/desktop-runner/tokens/"+toks[0].TokenID, alice, nil)
	if code, body := e.do("GET", "/v1/desktop-runner/work", r.token, nil); code != 401 {
		t.Fatalf("revoked runner token = %d %s", code, body)
	}
	bob := e.member("acme", "bob")
	if code, body := e.do("DELETE", "/v1/desktop-runner/tokens/"+toks[0].TokenID, bob, nil); code != 404 {
		t.Fatalf("bob revoking alice's token = %d %s", code, body)
	}
	if code, body := e.do("POST", "/v1/desktop-runner/tokens", bob, map[string]string{"runnerId": "laptop"}); code != 409 ||
		!strings.Contains(string(body), `"code":"runner_taken"`) {
		t.Fatalf("bob minting for alice's runner id = %d %s", code, body)
	}
}
