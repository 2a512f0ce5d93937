package streams

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"testing"
)

// slowRawNumbers is the decoder's reading of checkRawNumbers' rule: every
// number token must parse as a finite float64.
func slowRawNumbers(raw []byte) bool {
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

var rawNumberCases = []string{
	`{"input_tokens":1,"output_tokens":2}`,
	`{"n":1e200000}`, `{"n":-1e309}`, `{"n":1e308}`, `[1.5e-400]`, `{"s":"1e200000"}`,
	`{"s":"a\"1e999\"b","n":3}`, `{"s":"\\","n":1e999}`, `{"a":[1,2,{"b":-0.5E+3}]}`,
	`{"n":1e200000`, `{"n":}`, `nope`, `{"k":"\u00e9"} `, `123`, `"x"`, `{"a":true,"b":null,"c":[]}`,
}

func TestCheckRawNumbersAgreesWithTheDecoder(t *testing.T) {
	for _, c := range rawNumberCases {
		if got, want := checkRawNumbers([]byte(c)) == nil, slowRawNumbers([]byte(c)); got != want {
			t.Errorf("%s: accepted %v, decoder says %v", c, got, want)
		}
	}
}

func FuzzCheckRawNumbers(f *testing.F) {
	for _, c := range rawNumberCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) == 0 {
			return
		}
		// A raw report is one JSON value (it was decoded from one); the
		// decoder also reads a stream of them, which checkRawNumbers refuses.
		want := json.Valid(raw) && slowRawNumbers(raw)
		if got := checkRawNumbers(raw) == nil; got != want {
			t.Fatalf("%q: accepted %v, want %v", raw, got, want)
		}
	})
}
