package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/auth"
)

// An admin maps, lists and unmaps an identity; a member's token may do
// none of it.
func TestMembersMapAndUnmap(t *testing.T) {
	n, _ := testNode(t)
	admin, _ := n.Signer.Mint(auth.Claims{Org: "dev", Member: "root", Role: auth.RoleAdmin}, time.Hour)
	out, err := capture(t, "members", "map", "email", "Ada@Example.com", "ada", "--token", admin)
	if err != nil || !strings.Contains(out, "mapped email ada@example.com to member ada") {
		t.Fatalf("map: %v\n%s", err, out)
	}
	out, err = capture(t, "members", "mapped", "--token", admin)
	if err != nil || !strings.Contains(out, "email  ada@example.com  ada     root") {
		t.Fatalf("mapped: %v\n%s", err, out)
	}
	if out, err = capture(t, "members", "unmapped", "--token", admin); err != nil || !strings.Contains(out, "no unmapped identities") {
		t.Fatalf("unmapped: %v\n%s", err, out)
	}
	if _, err := capture(t, "members", "map", "email", "bob@example.com", "bob"); err == nil || !strings.Contains(err.Error(), "403 admin_required") {
		t.Fatalf("a member's map: %v, want 403 admin_required", err)
	}
	if _, err := capture(t, "members", "map", "name", "ada", "ada", "--token", admin); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("map of kind name: %v, want a 400", err)
	}
	if out, err = capture(t, "members", "unmap", "email", "ada@example.com", "--token", admin); err != nil || !strings.Contains(out, "unmapped email ada@example.com") {
		t.Fatalf("unmap: %v\n%s", err, out)
	}
	if _, err := capture(t, "members", "unmap", "email", "ada@example.com", "--token", admin); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("second unmap: %v, want a 404", err)
	}
	if _, err := capture(t, "members", "map", "email", "x"); exitCode(err) != 2 {
		t.Fatalf("map without a member: %v, want a usage error", err)
	}
}

// An ingest token's events of an identity no admin mapped are listed by
// spine members unmapped, with their count, until it is mapped.
func TestMembersUnmappedListsAnIngestTokensUsers(t *testing.T) {
	n, _ := testNode(t)
	admin, _ := n.Signer.Mint(auth.Claims{Org: "dev", Member: "root", Role: auth.RoleAdmin}, time.Hour)
	ingest, _ := n.Signer.Mint(auth.Claims{Org: "dev", Member: "root", Role: auth.RoleAdmin, Audience: auth.AudienceIngest}, time.Hour)
	body, err := os.ReadFile("../../testdata/otlp/claude-code-json-logs-1.json")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", "http://"+n.HTTPAddr()+"/otlp/v1/logs", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+ingest)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %v %v", resp, err)
	}
	resp.Body.Close()
	const user = "75f119addc7d0accdd55dd925a4a9137567275f8684c61c1f39d743ecff99756" // the capture's user.id
	out, err := capture(t, "members", "unmapped", "--token", admin)
	if err != nil || !strings.Contains(out, "user  "+user+"  ") || !strings.Contains(out, "were not recorded") {
		t.Fatalf("unmapped: %v\n%s", err, out)
	}
	if out, err := capture(t, "members", "unmapped", "--json", "--token", admin); err != nil || !strings.Contains(out, `"value":"`+user+`"`) {
		t.Fatalf("unmapped --json: %v\n%s", err, out)
	}
	if _, err := capture(t, "members", "map", "user", user, "ada", "--token", admin); err != nil {
		t.Fatal(err)
	}
	if out, _ := capture(t, "members", "unmapped", "--token", admin); !strings.Contains(out, "no unmapped identities") {
		t.Fatalf("unmapped after mapping:\n%s", out)
	}
}

// What the apps reported is printed as a terminal may show it: a value
// holding an escape sequence (listed before the door dropped such values)
// prints without its control characters, in one table row.
func TestMembersPrintsNoControlCharacters(t *testing.T) {
	n, _ := testNode(t)
	admin, _ := n.Signer.Mint(auth.Claims{Org: "dev", Member: "root", Role: auth.RoleAdmin}, time.Hour)
	if _, err := n.Pool.Exec(context.Background(), `INSERT INTO telemetry_unmapped (org, kind, value, first_seen, last_seen, events)
		VALUES ('dev', 'user', E'evil\x1b]0;pwned\x07\x1b[2J\u202e\tcol\nrow', now(), now(), 1)`); err != nil {
		t.Fatal(err)
	}
	out, err := capture(t, "members", "unmapped", "--token", admin)
	if err != nil || strings.ContainsAny(out, "\x1b\x07\u202e") || !strings.Contains(out, "user  evil]0;pwned[2J col row  1") {
		t.Fatalf("unmapped: %v\n%q", err, out)
	}
}
