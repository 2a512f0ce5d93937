package accounting_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/streams"
)

// FuzzDecodeBudget: any bytes either decode to a budget that validates and
// re-encodes to one that decodes the same, or are refused with a
// *streams.Rejection (so they can be dead-lettered), never a panic.
func FuzzDecodeBudget(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"type":"plan.budget","id":"b1","at":"2026-11-01T00:00:00Z","planId":"p1","org":"acme","member":"alice","dollarCeiling":12.50,"loopCap":20}`,
		`{"v":1,"type":"plan.budget","id":"b2","at":"2026-11-01T00:00:00Z","planId":"p1","org":"acme","member":"alice","dollarCeiling":null,"loopCap":null}`,
		`{"v":1,"type":"plan.budget","id":"b3","at":"2026-11-01T00:00:00Z","planId":"p1","org":"acme","member":"alice","dollarCeiling":"1e3"}`,
		`{"v":1,"type":"plan.budget","id":"b4","at":"2026-11-01T00:00:00Z","planId":"p 1","org":"acme","member":"a","loopCap":-1}`,
		`{"v":1,"type":"plan.budget","id":"b5","at":"2026-11-01T00:00:00Z","planId":"p1","org":"acme","member":"alice","dollarCeiling":1e-20000}`,
		`{"v":1,"type":"plan.budget","id":"b6","at":"2026-11-01T00:00:00Z","planId":"p1","org":"acme","member":"alice","dollarCeiling":999999999999.999999}`,
		`{"v":2}`, `[]`, `{"dollarCeiling":1e400}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := accounting.DecodeBudget(data)
		if err != nil {
			if !errors.Is(err, streams.ErrRejected) {
				t.Fatalf("error %v is not a rejection", err)
			}
			return
		}
		if d := b.DollarCeiling; d != nil && strings.ContainsAny(d.String(), "eE-+") {
			t.Fatalf("ceiling %s is not a plain decimal", d)
		}
		again, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", b, err)
		}
		if _, err := accounting.DecodeBudget(again); err != nil {
			t.Fatalf("re-decode %s: %v", again, err)
		}
	})
}
