package fastjson

import (
	"encoding/json"
	"reflect"
	"testing"
)

type probe struct {
	Seq   int64    `json:"seq"`
	Code  *int32   `json:"code"`
	Cost  *float64 `json:"cost"`
	Text  string   `json:"text"`
	Items []int    `json:"items"`
}

var cases = []string{
	`{"seq":1,"text":"a"}`,
	`{"seq":9223372036854775807}`,
	`{"seq":9223372036854775808}`,
	`{"seq":25000000000000000000}`,
	`{"seq":-9223372036854775809}`,
	`{"code":4294967296}`,
	`{"code":2147483647}`,
	`{"cost":1e400}`,
	`{"cost":-0.5e-3,"items":[1,2,3]}`,
	`{"seq":"1"}`,
	`{"seq":1} x`,
	`{"Seq":5,"TEXT":"case"}`,
	`{"text":"\u0000\ud800"}`,
	`{"text":"tab	in a string"}`,
	"{\"text\":\"\xff\xfe\"}",
	`{"seq":01}`,
	`{"seq":1e}`,
	`[1,2,]`,
	` {"a":[{"b":null}]} `,
	`"1234567890123456789"`,
	`{"a":"x"}{"b":1}`,
	`{"a":"\x"}`,
	`-`,
	``,
}

// Unmarshal agrees with encoding/json: the same value, or an error of the
// same type.
func TestUnmarshalAgreesWithTheStandardLibrary(t *testing.T) {
	for _, c := range cases {
		check(t, []byte(c))
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { check(t, data) })
}

func check(t *testing.T, data []byte) {
	t.Helper()
	if got, want := Valid(data), json.Valid(data); got != want {
		t.Fatalf("%q: Valid %v, encoding/json says %v", data, got, want)
	}
	if got, want := longDigitRun(data), naiveDigitRun(data); got != want {
		t.Fatalf("%q: longDigitRun %v, byte by byte %v", data, got, want)
	}
	var got, want probe
	gotErr, wantErr := Unmarshal(data, &got), json.Unmarshal(data, &want)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: error %v, encoding/json says %v", data, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %+v, encoding/json says %+v", data, got, want)
	}
}

// naiveDigitRun is longDigitRun byte by byte.
func naiveDigitRun(data []byte) bool {
	run := 0
	for _, c := range data {
		if c >= '0' && c <= '9' {
			if run++; run >= 19 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// Every run of 19 digits is found wherever it starts and ends, and no
// shorter one.
func TestLongDigitRun(t *testing.T) {
	for size := 0; size < 60; size++ {
		for start := 0; start+size <= 60; start++ {
			data := make([]byte, 60)
			for i := range data {
				data[i] = 'x'
			}
			for i := start; i < start+size; i++ {
				data[i] = '7'
			}
			if got := longDigitRun(data[:min(60, start+size+start%3)]); got != (size >= 19) {
				t.Fatalf("%d digits at %d: %v", size, start, got)
			}
		}
	}
}
