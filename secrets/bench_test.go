package secrets

import (
	"strings"
	"testing"
)

// benchText is shell output of the kind sessions carry: prose and code
// with words (key, token, api) that wake the keyword prefilter.
var benchText = strings.Repeat("go test ./... ok  github.com/spinehq/spine/streams 0.41s\n"+
	"func (k *Key) Token() string { return k.api.token } // returns the api token\n"+
	"The quick brown fox jumps over the lazy dog; nothing secret here.\n", 20)

var cleanText = strings.Repeat("The quick brown fox jumps over the lazy dog; nothing to see here at all.\n", 60)

func BenchmarkStringClean(b *testing.B) {
	Default()
	b.SetBytes(int64(len(cleanText)))
	for b.Loop() {
		String(cleanText)
	}
}

func BenchmarkStringKeywords(b *testing.B) {
	Default()
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		String(benchText)
	}
}

func BenchmarkDefaultCompile(b *testing.B) {
	for b.Loop() {
		if _, err := gitleaksRules(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPathological redacts a MiB-long line of each shape that once
// took minutes, and a MiB of prose with one non-ASCII character.
func BenchmarkPathological(b *testing.B) {
	Default()
	shapes := append(append([]string(nil), pathological...), "é")
	for _, unit := range shapes {
		s := strings.Repeat(unit, (1<<20)/len(unit))
		if unit == "é" {
			s = strings.Repeat(cleanText, (1<<20)/len(cleanText)) + unit
		}
		b.Run(strings.TrimSpace(unit), func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				String(s)
			}
		})
	}
}
