package streams

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spinehq/spine/internal/pgtest"
)

// finiteNumbers is the decoder's reading of the float64 part of the rule:
// every number token parses as a finite float64 (spine is stricter there
// than numeric, which takes 131,072 digits).
func finiteNumbers(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
		if n, ok := tok.(json.Number); ok {
			if f, err := strconv.ParseFloat(string(n), 64); err != nil || math.IsInf(f, 0) {
				return false
			}
		}
	}
}

var rawJSONCases = []string{
	`{"input_tokens":1,"output_tokens":2}`,
	`{"n":1e200000}`, `{"n":-1e309}`, `{"n":1e308}`, `[1.5e-400]`, `{"s":"1e200000"}`,
	`{"s":"a\"1e999\"b","n":3}`, `{"s":"\\","n":1e999}`, `{"a":[1,2,{"b":-0.5E+3}]}`,
	`{"n":1e200000`, `{"n":}`, `nope`, `{"k":"\u00e9"} `, `123`, `"x"`, `{"a":true,"b":null,"c":[]}`,
	// jsonb refuses unpaired surrogate escapes, in values and keys alike.
	`{"s":"\ud800"}`, `{"s":"\udc00"}`, `{"s":"\ud800\ud800"}`, `{"s":"\ud800x"}`, `{"s":"\ud800\n"}`,
	`{"\ud800":1}`, `{"s":"\uDBFF"}`, `["\ud800\u0000"]`,
	`{"s":"\ud83d\ude00"}`, `{"s":"\uDBFF\uDFFF"}`, `{"s":"\\ud800"}`, `{"s":"x\\\ud800"}`,
	// \u0000 is replaced by U+FFFD before the check, as Decode does.
	`{"s":"\u0000"}`, `{"\u0000":"\\u0000"}`,
	// numeric's scale is at most 16,383 digits; its exponent below 2^30.
	`[1e-16383]`, `[1e-16384]`, `[0.5e-16382]`, `[1.5e-16382]`, `[0e-20000]`, `[0.0e-16383]`, `[10e-16384]`,
	`[1e-0016383]`, `[0e1073741822]`, `[0e1073741823]`, `[0e99999999999]`, `[1e-1000000000000]`, `[0e200000]`,
}

// pgAccepts reports whether PostgreSQL stores raw as jsonb.
func pgAccepts(t testing.TB, pool *pgxpool.Pool, raw []byte) bool {
	var s string
	err := pool.QueryRow(context.Background(), `SELECT $1::text::jsonb::text`, string(raw)).Scan(&s)
	return err == nil
}

// checkAgainstPostgreSQL: what the door accepts (after Decode's scrub)
// PostgreSQL stores, and what PostgreSQL refuses the door refuses.
func checkAgainstPostgreSQL(t *testing.T, pool *pgxpool.Pool, raw []byte) {
	t.Helper()
	scrubbed := ScrubJSON(raw)
	got := CheckRawJSON("usage.raw", scrubbed) == nil
	want := json.Valid(scrubbed) && finiteNumbers(scrubbed) && pgAccepts(t, pool, scrubbed)
	if got != want {
		t.Fatalf("%q: door accepts %v, PostgreSQL (and the float64 rule) %v", raw, got, want)
	}
}

func TestCheckRawJSONAgreesWithPostgreSQL(t *testing.T) {
	pool, _ := pgtest.New(t)
	for _, c := range rawJSONCases {
		t.Run("", func(t *testing.T) { checkAgainstPostgreSQL(t, pool, []byte(c)) })
	}
}

func FuzzCheckRawJSON(f *testing.F) {
	pool, _ := pgtest.New(f)
	for _, c := range rawJSONCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		// Decode refuses an envelope that is not UTF-8 before any field is read.
		if len(raw) == 0 || !utf8.Valid(raw) {
			return
		}
		checkAgainstPostgreSQL(t, pool, raw)
	})
}
