// Package fastjson is encoding/json's Marshal and Unmarshal, done by
// github.com/segmentio/encoding/json (about twice as fast, with the
// standard library's error types), except where the two would differ.
//
// segmentio's integer parser can wrap an integer past int64 instead of
// refusing it ({"seq":25000000000000000000} decodes as
// 6553255926290448384), so data holding a run of 19 or more digits, which
// is where such an integer could be, is decoded by encoding/json.
package fastjson

import (
	"encoding/json"

	segjson "github.com/segmentio/encoding/json"
)

// RawMessage is encoding/json's.
type RawMessage = json.RawMessage

// Unmarshal is encoding/json.Unmarshal.
func Unmarshal(data []byte, v any) error {
	if longDigitRun(data) {
		return json.Unmarshal(data, v)
	}
	return segjson.Unmarshal(data, v)
}

// Marshal is encoding/json.Marshal.
func Marshal(v any) ([]byte, error) { return segjson.Marshal(v) }

// Valid is encoding/json.Valid.
func Valid(data []byte) bool { return segjson.Valid(data) }

// longDigitRun reports whether data holds 19 or more digits in a row: the
// shortest integer that can overflow int64 (9223372036854775808) has 19.
// Any 19 bytes in a row hold exactly one index i with i%19 == 18, so only
// those bytes are looked at first, and a run measured around each that is
// a digit: data is read once in 19 bytes, long text costs little.
func longDigitRun(data []byte) bool {
	for i := 18; i < len(data); i += 19 {
		if !isDigit(data[i]) {
			continue
		}
		lo, hi := i, i+1
		for lo > 0 && isDigit(data[lo-1]) {
			lo--
		}
		for hi < len(data) && hi-lo < 19 && isDigit(data[hi]) {
			hi++
		}
		if hi-lo >= 19 {
			return true
		}
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
