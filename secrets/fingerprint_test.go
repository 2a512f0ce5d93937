package secrets

import (
	"strings"
	"testing"
)

// The fingerprint names the rules: the same set gives the same one, a set
// without one rule, or with one rule changed, another.
func TestFingerprintNamesTheRules(t *testing.T) {
	d := Default()
	fp := d.Fingerprint()
	if fp == "" || fp != Fingerprint() || !strings.HasPrefix(fp, "v1:") {
		t.Fatalf("fingerprint %q, then %q", fp, Fingerprint())
	}
	if again := newRedactor(d.rules).Fingerprint(); again != fp {
		t.Fatalf("the same rules: %q, want %q", again, fp)
	}
	if fewer := newRedactor(d.rules[1:]).Fingerprint(); fewer == fp {
		t.Fatal("a rule set without its first rule has the same fingerprint")
	}
	changed := append([]rule(nil), d.rules...)
	changed[0].entropy++
	if other := newRedactor(changed).Fingerprint(); other == fp {
		t.Fatal("a rule set with a rule changed has the same fingerprint")
	}
}
