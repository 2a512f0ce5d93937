package server

import (
	"testing"
	"time"
)

// A bucket starts with QuotaBurst seconds saved up, admits while it is not
// in debt, asks for exactly the time the debt takes to repay, refills at
// the rate up to the burst, and is forgotten once full when the map is big.
func TestQuotaBuckets(t *testing.T) {
	now := time.Unix(1000, 0)
	q := newQuotas(100, 10)
	q.now = func() time.Time { return now }
	if wait := q.admit("a"); wait != 0 {
		t.Fatalf("a fresh org waits %s", wait)
	}
	q.charge("a", 100*QuotaBurst+50, 1) // 50 bytes in debt: half a second
	if wait := q.admit("a"); wait != 500*time.Millisecond {
		t.Fatalf("in debt by 50 bytes at 100 B/s: wait %s", wait)
	}
	q.charge("a", 0, 10*QuotaBurst+19) // 20 envelopes in debt: two seconds
	if wait := q.admit("a"); wait != 2*time.Second {
		t.Fatalf("in debt by 20 envelopes at 10/s: wait %s", wait)
	}
	if wait := q.admit("b"); wait != 0 {
		t.Fatalf("another org waits %s while a is in debt", wait)
	}
	now = now.Add(2 * time.Second)
	if wait := q.admit("a"); wait != 0 {
		t.Fatalf("after repaying: wait %s", wait)
	}
	now = now.Add(time.Hour)
	if b := q.refill("a"); b.bytes != 100*QuotaBurst || b.envs != 10*QuotaBurst {
		t.Fatalf("refilled past the burst: %+v", b)
	}
	q.forgetFull(now)
	if len(q.orgs) != 0 {
		t.Fatalf("full buckets kept: %d", len(q.orgs))
	}
	if newQuotas(-1, 0) != nil {
		t.Fatal("quotas that are all off still meter")
	}
}
