package server

import (
	"encoding/json"
	"testing"
)

// FuzzSplitBatch: any body either splits into items or is refused with an
// error; it never panics, and a JSON array splits into exactly its elements.
func FuzzSplitBatch(f *testing.F) {
	f.Add([]byte(`[{"v":1},{"v":2}]`))
	f.Add([]byte(`{"envelopes":[{"v":1}]}`))
	f.Add([]byte("{\"v\":1}\n{\"v\":2}\n"))
	f.Add([]byte(`[`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := splitBatch(body)
		if err != nil {
			return
		}
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) == nil && arr != nil && len(items) != len(arr) {
			t.Fatalf("array of %d split into %d", len(arr), len(items))
		}
		for _, it := range items {
			if len(it) == 0 {
				t.Fatal("empty item")
			}
		}
	})
}

func TestSplitBatchShapes(t *testing.T) {
	for body, want := range map[string]int{
		`[{"a":1},{"b":2}]`:               2,
		`{"envelopes":[{"a":1}]}`:         1,
		"{\"a\":1}\n\n{\"b\":2}\n":        2,
		` [ ] `:                           0,
		`{"envelopes":[{"a":1},{"b":2}]}`: 2,
	} {
		items, err := splitBatch([]byte(body))
		if err != nil || len(items) != want {
			t.Errorf("%q: %d items, %v; want %d", body, len(items), err, want)
		}
	}
	for _, bad := range []string{"", "   ", `[{"a":1}`} {
		if _, err := splitBatch([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
