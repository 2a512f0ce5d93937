package secrets

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"regexp"

	"github.com/zricethezav/gitleaks/v8/config"
)

// rulesRevision is bumped whenever spine's code changes what a rule finds
// without changing its pattern (a skip function, how windows are cut, how
// a match becomes a span), so the fingerprint changes with it.
const rulesRevision = 1

// Fingerprint names the rules r redacts with: every rule's id, pattern,
// group, keywords, entropy and allowlists, and rulesRevision. Text redacted
// by a Redactor of the same fingerprint is unchanged by another pass
// (redaction is idempotent: a second pass finds nothing, or only the
// Redacted markers, which it leaves), so a reader given the fingerprint
// with the text may skip the pass; one given another, or none, must not.
func (r *Redactor) Fingerprint() string {
	r.printOnce.Do(func() {
		h := sha256.New()
		fmt.Fprintf(h, "revision %d\n", rulesRevision)
		for _, ru := range r.rules {
			fmt.Fprintf(h, "%q %q %d %q %v %v %v\n", ru.id, ru.re.String(), ru.group, ru.keywords, ru.entropy,
				ru.wide, ru.assigns)
			for _, a := range ru.allow {
				writeAllowlist(h, a)
			}
		}
		r.print = "v1:" + hex.EncodeToString(h.Sum(nil))[:32]
	})
	return r.print
}

// Fingerprint is Default's.
func Fingerprint() string { return Default().Fingerprint() }

func writeAllowlist(h hash.Hash, a *config.Allowlist) {
	fmt.Fprintf(h, "allow %v %q %q %q\n", a.MatchCondition, a.RegexTarget, a.StopWords, a.Commits)
	for _, re := range append(append([]*regexp.Regexp(nil), a.Regexes...), a.Paths...) {
		fmt.Fprintf(h, "  %q\n", re.String())
	}
}
