package secrets

import (
	"bytes"
	"encoding/json"
)

// JSON returns raw with the secrets inside its strings replaced. The
// result is valid JSON whenever raw is, and raw without a secret comes
// back as it is. A string value is read together with its key, so
// {"authorization": "Basic abc"} loses only abc. Bytes that are not JSON
// are redacted as text.
func JSON(raw []byte) []byte { return Default().JSON(raw) }

// Bytes is JSON for bytes that may or may not be JSON, such as a dead
// letter's message.
func Bytes(b []byte) []byte { return Default().JSON(b) }

// JSON is the package's JSON for r.
func (r *Redactor) JSON(raw []byte) []byte {
	if !json.Valid(raw) {
		// Invalid UTF-8 is redacted as it is, byte for byte: replacing
		// each bad byte with U+FFFD (3 bytes) would triple a message of
		// them, past what the log can carry.
		s := string(raw)
		if out := r.String(s); out != s {
			return []byte(out)
		}
		return raw
	}
	var out []byte // nil until the first change
	prev, key := 0, ""
	var open []container
	for i := 0; i < len(raw); {
		if raw[i] != '"' {
			open = nest(open, raw, i, key)
			i++
			continue
		}
		end := stringEnd(raw, i)
		s := unquote(raw[i:end])
		var red string
		switch {
		case isKey(raw, end):
			red, key = r.String(s), s
		case afterColon(raw, i):
			red = r.value(key, s)
		case len(open) > 0 && open[len(open)-1].array && open[len(open)-1].key != "":
			red = r.value(open[len(open)-1].key, s)
		default:
			red = r.String(s)
		}
		if red != s {
			out = append(append(out, raw[prev:i]...), quote(red)...)
			prev = end
		}
		i = end
	}
	if out == nil {
		return raw
	}
	return append(out, raw[prev:]...)
}

// container is an object or array the walk is inside. An array keeps
// the key it is the value of, so {"authorization": ["Basic abc"]} reads
// each element with its key, as a single value would be.
type container struct {
	array bool
	key   string
}

// nest follows the structure at raw[i], a byte outside any string.
func nest(open []container, raw []byte, i int, key string) []container {
	switch raw[i] {
	case '[':
		k := ""
		if afterColon(raw, i) {
			k = key
		} else if n := len(open); n > 0 && open[n-1].array {
			k = open[n-1].key
		}
		return append(open, container{array: true, key: k})
	case '{':
		return append(open, container{})
	case ']', '}':
		if len(open) > 0 {
			return open[:len(open)-1]
		}
	}
	return open
}

// value redacts s on its own and as the value of key, so a label that
// only the key carries still finds the secret.
func (r *Redactor) value(key, s string) string {
	prefix := key + ": "
	spans := r.find(s)
	for _, sp := range r.find(prefix + s) {
		if sp.end <= len(prefix) {
			continue
		}
		spans = append(spans, span{max(sp.start, len(prefix)) - len(prefix), sp.end - len(prefix)})
	}
	spans = merge(spans)
	if len(spans) == 0 {
		return s
	}
	return replace(s, spans)
}

// stringEnd is the index just past the string literal starting at raw[i].
func stringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

func unquote(lit []byte) string {
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1])
	}
	var s string
	if json.Unmarshal(lit, &s) != nil {
		return string(lit[1 : len(lit)-1])
	}
	return s
}

func quote(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func isKey(raw []byte, end int) bool {
	for ; end < len(raw); end++ {
		switch raw[end] {
		case ' ', '\t', '\r', '\n':
		case ':':
			return true
		default:
			return false
		}
	}
	return false
}

func afterColon(raw []byte, i int) bool {
	for i--; i >= 0; i-- {
		switch raw[i] {
		case ' ', '\t', '\r', '\n':
		case ':':
			return true
		default:
			return false
		}
	}
	return false
}
