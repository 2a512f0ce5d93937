package node_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/streams"
)

var letterRE = regexp.MustCompile(`data-letter="([^"]+)"`)

// letters are the dead letters a page lists, as STREAM:SEQ.
func letters(page string) []string {
	var out []string
	for _, m := range letterRE.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// The dead letters page lists the caller's dead letters exactly as GET
// /v1/deadletters does (an admin's: the org's, naming each member), 50 a
// page; a letter's page shows its message as stored, escaped, a large one
// cut with a note; another member's letter is the same 404 page as a
// missing one.
func TestDeadLettersPage(t *testing.T) {
	f := newFixture(t)
	m1, m2, admin := f.token("o1", "m1"), f.token("o1", "m2"), f.adminToken("o1", "boss")
	late := []*streams.Envelope{spinetest.Start("a"), spinetest.End("a", "done", "", ""),
		spinetest.Text("a", 1, strings.Repeat("x", 100<<10)+"TAIL")}
	for i := 2; i <= 51; i++ {
		late = append(late, spinetest.Text("a", int64(i), "late"))
	}
	// Raw '<' and '>' in the body (Go's encoder writes \u003c): the log keeps the bytes as sent.
	f.ingest(m1, late...)
	f.waitCaughtUp()
	// A trusted producer's late chunk, its '<' as sent (HTTP ingest stores \u003c).
	raw := `{"v":1,"type":"session.chunk","id":"a-raw","at":"2026-11-01T09:00:01Z","sessionId":"a","seq":60,"stream":"stdout","text":"<script>alert(1)</script>"}`
	if _, err := f.n.JS.Publish(t.Context(), streams.SessionSubject("a", "chunk"), []byte(raw)); err != nil {
		t.Fatal(err)
	}
	f.ingest(m2, spinetest.Start("b"), spinetest.End("b", "done", "", ""), spinetest.Text("b", 1, "late"))
	f.waitCaughtUp()

	api := func(tok, query string) []string {
		var out []string
		for _, d := range decode[DeadLetterPage](t, f.mustDo(200, "GET", "/v1/deadletters"+query, tok, nil)).DeadLetters {
			out = append(out, fmt.Sprintf("%s:%d", d.Stream, d.Seq))
		}
		return out
	}
	page := f.page(200, "/ui/deadletters", m1)
	want := api(m1, "?limit=50")
	if got := letters(page); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("page lists %v, the API %v", got, want)
	}
	for _, s := range []string{streams.ReasonSessionEnded, "spine.session.a.chunk", `data-more="#deadletter-rows"`} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	more := regexp.MustCompile(`data-more="#deadletter-rows" href="([^"]+)"`).FindStringSubmatch(page)
	rest := f.page(200, strings.ReplaceAll(more[1], "&amp;", "&")+"&fragment=1", m1)
	if got, want := letters(rest), api(m1, "?after="+want[49]); strings.Join(got, " ") != strings.Join(want, " ") ||
		len(got) != 2 || strings.Contains(rest, "<html") {
		t.Fatalf("the next page's rows %v, the API's %v:\n%s", got, want, rest)
	}
	if got, want := letters(f.page(200, "/ui/deadletters", m2)), api(m2, ""); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("m2's page lists %v, the API %v", got, want)
	}
	org := f.page(200, "/ui/deadletters", admin)
	if got := letters(org); len(got) != 50 || !strings.Contains(org, `<th scope="col">member</th>`) || !strings.Contains(org, "<td>m1</td>") {
		t.Fatalf("the admin's page lists %v:\n%s", got, org)
	}
	if bad := f.page(400, "/ui/deadletters?after=nope", m1); !strings.Contains(bad, "after must be") {
		t.Errorf("a bad cursor:\n%s", bad)
	}

	first := strings.Replace(want[0], ":", "/", 1)
	letter := f.page(200, "/ui/deadletters/"+first, m1)
	for _, s := range []string{"Showing the first 65,536 of its", "GET /v1/deadletters/" + first, streams.ReasonSessionEnded} {
		if !strings.Contains(letter, s) {
			t.Errorf("the letter's page lacks %q", s)
		}
	}
	if strings.Contains(letter, "TAIL") {
		t.Errorf("the letter's page shows a large message whole")
	}
	all := api(m1, "?after="+want[49])
	script := f.page(200, "/ui/deadletters/"+strings.Replace(all[len(all)-1], ":", "/", 1), m1)
	if !strings.Contains(script, "&lt;script&gt;alert(1)&lt;/script&gt;") || strings.Contains(script, "<script>alert") ||
		strings.Contains(script, "Showing the first") {
		t.Errorf("the letter of a raw '<':\n%s", script)
	}
	if f.page(200, "/ui/deadletters/"+first, admin) == "" {
		t.Fatal("the admin reads m1's letter")
	}
	missing := f.page(404, "/ui/deadletters/"+strings.Split(first, "/")[0]+"/999999", m2)
	if theirs := f.page(404, "/ui/deadletters/"+first, m2); theirs != missing || !strings.Contains(theirs, "dead letter not found") {
		t.Fatalf("m2 reading m1's letter:\n%s\nmissing:\n%s", theirs, missing)
	}
	if bad := f.page(404, "/ui/deadletters/nope/x", m2); bad != missing {
		t.Fatalf("a malformed letter's page:\n%s", bad)
	}
}
