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
	var got, want probe
	gotErr, wantErr := Unmarshal(data, &got), json.Unmarshal(data, &want)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: error %v, encoding/json says %v", data, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %+v, encoding/json says %+v", data, got, want)
	}
}
