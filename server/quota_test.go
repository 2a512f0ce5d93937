package server

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"time"
)

// A bucket starts with QuotaBurst seconds saved up, admits while it is not
// in debt, asks for exactly the time the debt takes to repay, refills at
// the rate up to the burst, and is forgotten once full when the map is big.
func TestQuotaBuckets(t *testing.T) {
	now := time.Unix(1000, 0)
	q := newQuotas(100, 10)
	q.now = func() time.Time { return now }
	if wait := q.admit("a", 0); wait != 0 {
		t.Fatalf("a fresh org waits %s", wait)
	}
	q.charge("a", 100*QuotaBurst+50, 1) // 50 bytes in debt: half a second
	if wait := q.admit("a", 0); wait != 500*time.Millisecond {
		t.Fatalf("in debt by 50 bytes at 100 B/s: wait %s", wait)
	}
	q.charge("a", 0, 10*QuotaBurst+19) // 20 envelopes in debt: two seconds
	if wait := q.admit("a", 0); wait != 2*time.Second {
		t.Fatalf("in debt by 20 envelopes at 10/s: wait %s", wait)
	}
	if wait := q.admit("b", 0); wait != 0 {
		t.Fatalf("another org waits %s while a is in debt", wait)
	}
	now = now.Add(2 * time.Second)
	if wait := q.admit("a", 0); wait != 0 {
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

// Admission charges a request's bytes in the same step, so of requests
// sent at once only those that fit the burst (and one past it) get in.
func TestQuotaChargesAtAdmission(t *testing.T) {
	now := time.Unix(1000, 0)
	q := newQuotas(100, 0)
	q.now = func() time.Time { return now }
	admitted := 0
	for range 10 {
		if q.admit("a", 150) == 0 {
			admitted++
		}
	}
	if admitted != 3 { // 400 bytes of burst: 150, 300, then 450 is 50 in debt
		t.Fatalf("%d of 10 requests of 150 bytes admitted against a 400-byte burst, want 3", admitted)
	}
	if q.admit("b", 150) != 0 {
		t.Fatal("another org is refused")
	}
}

// No org holds more than half of the in-flight budget; another org still
// gets the other half.
func TestBudgetShare(t *testing.T) {
	b := newBudget(1000, prometheus.NewGauge(prometheus.GaugeOpts{Name: "g"}))
	if !b.take("a", 400) || b.take("a", 200) {
		t.Fatal("org a may hold 500 of 1000 and no more")
	}
	if !b.take("b", 500) {
		t.Fatal("org b is refused while a holds 400")
	}
	if b.clamp(800) != 500 {
		t.Fatalf("a request weighing 800 clamps to %d, want the share 500", b.clamp(800))
	}
	b.give("a", 400)
	if len(b.orgs) != 1 || !b.take("a", 500) {
		t.Fatalf("after a gives back: %v", b.orgs)
	}
}
