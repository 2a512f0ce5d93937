package streams_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spinehq/spine/streams"
)

// decodeReasons is every reason Decode may give: the rules a single
// envelope can break on its own.
var decodeReasons = []string{
	streams.ReasonMalformed, streams.ReasonInvalidUTF8, streams.ReasonTooLarge, streams.ReasonFieldTooLong, streams.ReasonWrongType,
	streams.ReasonUnknownVersion, streams.ReasonUnknownType, streams.ReasonMissingField,
	streams.ReasonInvalidField, streams.ReasonInvalidID, streams.ReasonUnknownApp,
	streams.ReasonEmbeddingsLevel, streams.ReasonUnknownAction,
}

// FuzzDecode feeds Decode arbitrary bytes. The seed corpus is in
// testdata/fuzz/FuzzDecode; the fixtures are added too.
func FuzzDecode(f *testing.F) {
	for _, typ := range streams.Types {
		f.Add([]byte(fixtures[typ]))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := streams.Decode(data)
		if err != nil {
			checkRejection(t, err)
			return
		}
		checkRoundTrip(t, e)
		for tok := range strings.SplitSeq(e.Subject(), ".") {
			if !streams.ValidID(tok) {
				t.Fatalf("subject %q has the invalid token %q", e.Subject(), tok)
			}
		}
	})
}

func checkRejection(t *testing.T, err error) {
	t.Helper()
	rej, ok := err.(*streams.Rejection)
	if !ok {
		t.Fatalf("Decode returned %T %v, want a *Rejection", err, err)
	}
	if rej.Reason == "" || !slices.Contains(decodeReasons, rej.Reason) {
		t.Fatalf("rejection reason %q is not a declared decode reason", rej.Reason)
	}
}

// checkRoundTrip: what Decode accepts, a producer can publish again and
// every reader decodes to the same envelope.
func checkRoundTrip(t *testing.T, e *streams.Envelope) {
	t.Helper()
	b1, err := e.Marshal()
	if err != nil {
		t.Fatalf("Marshal of a decoded envelope: %v", err)
	}
	e2, err := streams.Decode(b1)
	if err != nil {
		t.Fatalf("Decode of re-marshalled envelope: %v\n%s", err, b1)
	}
	b2, err := e2.Marshal()
	if err != nil {
		t.Fatalf("second Marshal: %v", err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("round trip changed the envelope:\n%s\n%s", b1, b2)
	}
	if err := e2.Validate(); err != nil {
		t.Fatalf("Validate after round trip: %v", err)
	}
}
