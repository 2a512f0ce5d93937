package streams

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// A raw report (usage.raw, a runner's usage event) is stored as jsonb, and
// jsonb refuses some JSON that every JSON reader takes: a \u escape of an
// unpaired UTF-16 surrogate, \u0000 (which Decode turns into U+FFFD), and
// numbers outside PostgreSQL's numeric (more than 16,383 digits after the
// point once the exponent is applied, an exponent of 2^30 or more). A row
// that cannot be written would dead-letter as unstorable after the door
// said yes, so the door refuses such a report.

// PostgreSQL's numeric limits that a JSON number can reach, and the one
// escape jsonb refuses that Decode replaces instead of refusing.
const (
	pgMaxScale    = 16383     // NUMERIC_DSCALE_MAX
	pgMaxExponent = 1<<30 - 1 // INT_MAX / 2: numeric_in refuses exponents at or past it
	maxExpDigits  = 10        // an exponent with more digits is past pgMaxExponent
	nulEscape     = `\u0000`
)

// CheckRawJSON refuses raw (named field in the refusal) unless it is one
// JSON value PostgreSQL's jsonb stores; empty raw is no report at all.
func CheckRawJSON(field string, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	if !json.Valid(raw) {
		var v any
		err := json.Unmarshal(raw, &v)
		return Reject(ReasonInvalidField, "%s is not JSON: %v", field, err)
	}
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			end, ok := scanString(raw, i)
			if !ok {
				return Reject(ReasonInvalidField, "%s holds an unpaired UTF-16 surrogate escape, which PostgreSQL's jsonb refuses", field)
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(raw) && isNumberByte(raw[j]) {
				j++
			}
			if !storableNumber(raw[i:j]) {
				return Reject(ReasonInvalidField, "%s holds a number PostgreSQL's numeric cannot store: %.40s", field, string(raw[i:j]))
			}
			i = j - 1
		}
	}
	return nil
}

// scanString reads the valid JSON string starting at raw[i] ('"') and
// returns the index of its closing quote, and false if it holds a \u
// escape of an unpaired surrogate.
func scanString(raw []byte, i int) (int, bool) {
	pendingHigh := false // the last escape was a high surrogate
	for i++; raw[i] != '"'; i++ {
		if raw[i] != '\\' {
			if pendingHigh {
				return i, false
			}
			continue
		}
		i++
		if raw[i] != 'u' {
			if pendingHigh {
				return i, false
			}
			continue
		}
		r, _ := strconv.ParseUint(string(raw[i+1:i+5]), 16, 32)
		i += 4
		switch {
		case r >= 0xD800 && r <= 0xDBFF: // a high surrogate: a low one must follow
			if pendingHigh {
				return i, false
			}
			pendingHigh = true
		case r >= 0xDC00 && r <= 0xDFFF: // a low surrogate: only after a high one
			if !pendingHigh {
				return i, false
			}
			pendingHigh = false
		default:
			if pendingHigh {
				return i, false
			}
		}
	}
	return i, !pendingHigh
}

// storableNumber reports whether a valid JSON number is one numeric takes:
// finite as a float64 (a stricter bound than numeric's 131,072 digits,
// kept from before), an exponent below 2^30, a scale of at most 16,383.
func storableNumber(n []byte) bool {
	if f, err := strconv.ParseFloat(string(n), 64); err != nil || math.IsInf(f, 0) {
		return false
	}
	mant, exp := n, int64(0)
	if k := bytes.IndexAny(n, "eE"); k >= 0 {
		digits := bytes.TrimLeft(bytes.TrimLeft(n[k+1:], "+-"), "0")
		if len(digits) > maxExpDigits {
			return false
		}
		exp, _ = strconv.ParseInt(string(n[k+1:]), 10, 64)
		if exp >= pgMaxExponent || exp <= -pgMaxExponent {
			return false
		}
		mant = n[:k]
	}
	frac := 0
	if k := bytes.IndexByte(mant, '.'); k >= 0 {
		frac = len(mant) - k - 1
	}
	return int64(frac)-exp <= pgMaxScale
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// ScrubJSON returns raw with every \u0000 escape in its strings (and keys)
// replaced by U+FFFD, leaving every other byte as the app wrote it.
func ScrubJSON(raw []byte) []byte {
	if !bytes.Contains(raw, []byte(nulEscape)) {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			out = append(out, raw[i])
			continue
		}
		if bytes.HasPrefix(raw[i:], []byte(nulEscape)) {
			out = append(out, "\uFFFD"...)
			i += len(nulEscape) - 1
			continue
		}
		out = append(out, raw[i], raw[i+1]) // an escape pair: \\ is not the start of \u0000
		i++
	}
	return out
}
