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

// longDigitRun reports whether data holds 19 or more digits in a row: the
// shortest integer that can overflow int64 (9223372036854775808) has 19.
func longDigitRun(data []byte) bool {
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
