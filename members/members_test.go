package members_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/internal/pgtest"
	"github.com/spinehq/spine/internal/spinetest"
	"github.com/spinehq/spine/members"
)

func TestMain(m *testing.M) { spinetest.Main(m) }

var ctx = context.Background()

var t0 = time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)

func id(kind, value string) members.Identity { return members.Identity{Kind: kind, Value: value} }

// An event's member is the first of its identities mapped, in one org
// only; unmapping gives the identity back to no one.
func TestMapResolveUnmap(t *testing.T) {
	pool, _ := pgtest.New(t)
	if _, err := members.Map(ctx, pool, "acme", id(members.User, "install-1"), "bob", "root", t0); err != nil {
		t.Fatal(err)
	}
	email, _ := members.Parse(members.Email, "Ada@Example.com")
	if email.Value != "ada@example.com" {
		t.Fatalf("email parsed as %q, want lower case", email.Value)
	}
	if _, err := members.Map(ctx, pool, "acme", email, "ada", "root", t0); err != nil {
		t.Fatal(err)
	}
	ev := []members.Identity{email, id(members.Account, "acct-1"), id(members.User, "install-1")}
	who, err := members.Resolve(ctx, pool, "acme", ev)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := who.Of(ev); !ok || m != "ada" {
		t.Fatalf("member of %v = %q %v, want ada (the email comes first)", ev, m, ok)
	}
	if m, ok := who.Of(ev[1:]); !ok || m != "bob" {
		t.Fatalf("member of %v = %q %v, want bob", ev[1:], m, ok)
	}
	other, _ := members.Resolve(ctx, pool, "globex", ev)
	if m, ok := other.Of(ev); ok {
		t.Fatalf("another org's event maps to %q", m)
	}
	if err := members.Unmap(ctx, pool, "acme", email); err != nil {
		t.Fatal(err)
	}
	if err := members.Unmap(ctx, pool, "acme", email); !errors.Is(err, members.ErrNotMapped) {
		t.Fatalf("second unmap: %v, want ErrNotMapped", err)
	}
	who, _ = members.Resolve(ctx, pool, "acme", ev[:1])
	if m, ok := who.Of(ev[:1]); ok {
		t.Fatalf("unmapped email still maps to %q", m)
	}
	list, more, err := members.List(ctx, pool, "acme", members.Identity{}, 10)
	if err != nil || more || len(list) != 1 || list[0].Member != "bob" || list[0].MappedBy != "root" {
		t.Fatalf("list = %+v %v %v", list, more, err)
	}
}

func TestMapRefusesBadInput(t *testing.T) {
	pool, _ := pgtest.New(t)
	for _, c := range []struct {
		id     members.Identity
		member string
		want   error
	}{
		{id("name", "ada"), "ada", members.ErrKind},
		{id(members.Email, ""), "ada", members.ErrValue},
		{id(members.Email, string(make([]byte, members.MaxValueLen+1))), "ada", members.ErrValue},
		{id(members.Email, "ada@example.com"), "ada lovelace", members.ErrMember},
		{id(members.Email, "ada@example.com"), "", members.ErrMember},
		{id(members.Machine, "vm"), "ada", members.ErrKind}, // listed, never mapped
		{id(members.None, "claude-code"), "ada", members.ErrKind},
	} {
		if _, err := members.Map(ctx, pool, "acme", c.id, c.member, "root", t0); !errors.Is(err, c.want) {
			t.Fatalf("map %+v to %q: %v, want %v", c.id, c.member, err, c.want)
		}
	}
}

// Unmapped identities are counted per org, keep their first sighting, are
// listed in pages, and leave the list once mapped.
func TestUnmappedAreCountedUntilMapped(t *testing.T) {
	pool, _ := pgtest.New(t)
	a, b := id(members.Email, "ada@example.com"), id(members.User, "install-9")
	if err := members.Count(ctx, pool, "acme", map[members.Identity]int64{a: 3, b: 1}, t0); err != nil {
		t.Fatal(err)
	}
	if err := members.Count(ctx, pool, "acme", map[members.Identity]int64{a: 2}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := members.Count(ctx, pool, "globex", map[members.Identity]int64{a: 7}, t0); err != nil {
		t.Fatal(err)
	}
	page, more, err := members.ListUnmapped(ctx, pool, "acme", members.Identity{}, 1)
	if err != nil || !more || len(page) != 1 {
		t.Fatalf("first page = %+v %v %v", page, more, err)
	}
	got := page[0]
	if got.Identity != a || got.Events != 5 || !got.FirstSeen.Equal(t0) || !got.LastSeen.Equal(t0.Add(time.Minute)) {
		t.Fatalf("unmapped %+v, want ada with 5 events seen from %s to a minute later", got, t0)
	}
	page, more, _ = members.ListUnmapped(ctx, pool, "acme", got.Identity, 1)
	if more || len(page) != 1 || page[0].Identity != b {
		t.Fatalf("second page = %+v %v", page, more)
	}
	if _, err := members.Map(ctx, pool, "acme", a, "ada", "root", t0); err != nil {
		t.Fatal(err)
	}
	page, _, _ = members.ListUnmapped(ctx, pool, "acme", members.Identity{}, 10)
	if len(page) != 1 || page[0].Identity != b {
		t.Fatalf("after mapping ada: %+v, want install-9 only", page)
	}
	page, _, _ = members.ListUnmapped(ctx, pool, "globex", members.Identity{}, 10)
	if len(page) != 1 || page[0].Events != 7 {
		t.Fatalf("globex's: %+v", page)
	}
}

// Past MaxUnmapped identities an org's new ones are not listed; those
// listed still count.
func TestUnmappedAreBounded(t *testing.T) {
	pool, _ := pgtest.New(t)
	many := map[members.Identity]int64{}
	for i := range members.MaxUnmapped {
		many[id(members.User, fmt.Sprintf("u%05d", i))] = 1
	}
	if err := members.Count(ctx, pool, "acme", many, t0); err != nil {
		t.Fatal(err)
	}
	first := id(members.User, "u00000")
	if err := members.Count(ctx, pool, "acme", map[members.Identity]int64{first: 1, id(members.User, "zzz"): 1}, t0); err != nil {
		t.Fatal(err)
	}
	var n, events int64
	if err := pool.QueryRow(ctx, `SELECT count(*), sum(events) FROM telemetry_unmapped WHERE org = 'acme'`).Scan(&n, &events); err != nil {
		t.Fatal(err)
	}
	if n != members.MaxUnmapped || events != members.MaxUnmapped+1 {
		t.Fatalf("%d identities with %d events, want %d with %d", n, events, members.MaxUnmapped, members.MaxUnmapped+1)
	}
}

// A value with a control or bidirectional formatting character is no
// identity: anyone with the ingest token sets the values an admin's
// terminal shows.
func TestParseRefusesControlCharacters(t *testing.T) {
	for _, v := range []string{"ada\x1b[2J@example.com", "ada\r@example.com", "a\tb", "a\x7fb", "a\u0085b", "evil\u202egpj.exe", "a\u2066b"} {
		if _, err := members.Parse(members.User, v); !errors.Is(err, members.ErrValue) {
			t.Errorf("%q: %v, want ErrValue", v, err)
		}
	}
	if _, err := members.Parse(members.Email, "ådå@example.com"); err != nil {
		t.Fatalf("a non-ASCII address: %v", err)
	}
}

// fillUnmapped lists n made-up identities of org, as Count would.
func fillUnmapped(t *testing.T, pool *pgxpool.Pool, org string, n int) {
	t.Helper()
	if _, err := pool.Exec(ctx, `INSERT INTO telemetry_unmapped (org, kind, value, first_seen, last_seen, events)
		SELECT $1, 'user', 'filler-' || i, $2, $2, 1 FROM generate_series(1, $3) AS i`, org, t0, n); err != nil {
		t.Fatal(err)
	}
}

// listed is how many identities org has listed.
func listed(t *testing.T, pool *pgxpool.Pool, org string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM telemetry_unmapped WHERE org = $1`, org).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// newIdentities are n identities none listed, prefix telling callers apart.
func newIdentities(prefix string, n int) map[members.Identity]int64 {
	out := map[members.Identity]int64{}
	for i := range n {
		out[id(members.User, fmt.Sprintf("%s-%d", prefix, i))] = 1
	}
	return out
}

// One count with more new identities than the org has room for lists
// only as many as the room: the cap is checked per row, not once per
// statement (which let one call list all of them past it).
func TestUnmappedCapHoldsForOneCall(t *testing.T) {
	pool, _ := pgtest.New(t)
	fillUnmapped(t, pool, "acme", members.MaxUnmapped-5)
	if err := members.Count(ctx, pool, "acme", newIdentities("new", 10), t0); err != nil {
		t.Fatal(err)
	}
	if n := listed(t, pool, "acme"); n != members.MaxUnmapped {
		t.Fatalf("%d listed, want the cap, %d", n, members.MaxUnmapped)
	}
}

// Counts of one org at once take turns: each sees the room the others
// left, so together they stay at the cap. A race is a matter of chance:
// five rounds of 16 make missing one unlikely.
func TestUnmappedCapHoldsUnderConcurrentCalls(t *testing.T) {
	pool, _ := pgtest.New(t)
	fillUnmapped(t, pool, "acme", members.MaxUnmapped-5)
	for round := range 5 {
		errs, start := make(chan error, 16), make(chan struct{})
		for c := range cap(errs) {
			go func() {
				<-start
				errs <- members.Count(ctx, pool, "acme", newIdentities(fmt.Sprint(round, "-", c), 10), t0)
			}()
		}
		close(start)
		for range cap(errs) {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if n := listed(t, pool, "acme"); n != members.MaxUnmapped {
			t.Fatalf("round %d: %d listed, want the cap, %d", round, n, members.MaxUnmapped)
		}
		if _, err := pool.Exec(ctx, `DELETE FROM telemetry_unmapped WHERE org = 'acme' AND value NOT LIKE 'filler-%'`); err != nil {
			t.Fatal(err)
		}
	}
}
