package accounting_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/streams"
)

func budgetJSON(ceiling string) []byte {
	return []byte(`{"v":1,"type":"plan.budget","id":"b1","at":"2026-11-01T00:00:00Z","planId":"p1","org":"acme","member":"alice","dollarCeiling":` + ceiling + `}`)
}

// A dollar ceiling is a plain decimal PostgreSQL's numeric stores exactly:
// exponents (which a float reading rounds, and numeric may refuse or
// overflow on), signs and more digits than the bounds are refused.
func TestDollarCeilingIsAPlainDecimal(t *testing.T) {
	for _, ok := range []string{"0", "12.50", "1.000000", "999999999999.999999"} {
		b, err := accounting.DecodeBudget(budgetJSON(ok))
		if err != nil {
			t.Errorf("%s: %v", ok, err)
			continue
		}
		if got := b.DollarCeiling.String(); got != ok {
			t.Errorf("%s read as %s", ok, got)
		}
	}
	for _, bad := range []string{"1e-20000", "1e3", "1E2", "-0", "-1", "0.1234567", "1000000000000", "9999999999999",
		"1e400", `"01"`, `"1."`, `".5"`, `" 1"`, `"Infinity"`, `"NaN"`, `"10"`, `"3.25"`, `{}`, `[1]`, `true`} {
		_, err := accounting.DecodeBudget(budgetJSON(bad))
		var rej *streams.Rejection
		if !errors.As(err, &rej) {
			t.Errorf("%s: %v, want a rejection", bad, err)
		} else if rej.Reason != streams.ReasonInvalidField && rej.Reason != streams.ReasonWrongType {
			t.Errorf("%s: reason %s", bad, rej.Reason)
		}
	}
}

// A ceiling written as a string is a producer's bug: refused as a wrong
// field type, as a string is for every other number, never read as 10.
func TestDollarCeilingIsNeverAString(t *testing.T) {
	_, err := accounting.DecodeBudget(budgetJSON(`"10"`))
	if rej, ok := streams.AsRejection(err); !ok || rej.Reason != streams.ReasonWrongType || !strings.Contains(rej.Detail, "dollarCeiling") {
		t.Fatalf("ceiling \"10\" = %v, want %s naming dollarCeiling", err, streams.ReasonWrongType)
	}
}
