package apps

import "github.com/spinehq/spine/streams"

// Tokens are usage in the buckets a session.end carries (streams.Usage;
// see Usage in doc.go): Input is the input that neither read nor wrote the
// cache, Reasoning a part of Output. The translation sums in these; a
// report puts them in the convention of every report
// (accounting.Normalise of Tokens.Usage).
type Tokens struct {
	Input      int64
	Output     int64
	CacheRead  int64
	CacheWrite int64
	Reasoning  int64
}

// Add adds o to t, count by count.
func (t *Tokens) Add(o Tokens) {
	t.Input += o.Input
	t.Output += o.Output
	t.CacheRead += o.CacheRead
	t.CacheWrite += o.CacheWrite
	t.Reasoning += o.Reasoning
}

// sum is every count but reasoning (a part of output): the tokens in all.
func (t Tokens) sum() int64 { return t.Input + t.Output + t.CacheRead + t.CacheWrite }

// Sub takes o from t, count by count.
func (t *Tokens) Sub(o Tokens) {
	t.Add(Tokens{-o.Input, -o.Output, -o.CacheRead, -o.CacheWrite, -o.Reasoning})
}

// Usage is t as an end's usage.
func (t Tokens) Usage() *streams.Usage {
	return &streams.Usage{InputTokens: t.Input, OutputTokens: t.Output, CacheReadTokens: t.CacheRead,
		CacheWriteTokens: t.CacheWrite, ReasoningTokens: t.Reasoning}
}
