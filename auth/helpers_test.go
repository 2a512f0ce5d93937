package auth_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/auth"
)

// testSecret is the fixed secret of test signers (and of the fuzz corpus).
var testSecret = []byte("spine-test-secret-0123456789abcdef")

// mintTime is when test signers mint; verifyTime is safely inside a 24h ttl.
var (
	mintTime   = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	verifyTime = mintTime.Add(time.Hour)
)

// counter is a deterministic io.Reader: 0, 1, 2, … mod 256.
type counter struct{ n byte }

func (c *counter) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.n
		c.n++
	}
	return len(p), nil
}

// newTestSigner returns a signer under secret that mints at mintTime with
// ids from a fresh counter, so the same calls mint the same tokens.
func newTestSigner(t testing.TB, secret []byte) *auth.Signer {
	t.Helper()
	s, err := auth.NewSigner(secret)
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	auth.SetClockAndRand(s, func() time.Time { return mintTime }, &counter{})
	return s
}

func mint(t testing.TB, s *auth.Signer, c auth.Claims) string {
	t.Helper()
	tok, err := s.Mint(c, 24*time.Hour)
	if err != nil {
		t.Fatalf("Mint: %v", err)
	}
	return tok
}

var b64 = base64.RawURLEncoding

// forge builds a token from raw header and payload JSON, signed with secret
// as our signer would sign it: proof that Verify checks more than the MAC.
func forge(secret []byte, header, payload string) string {
	signed := b64.EncodeToString([]byte(header)) + "." + b64.EncodeToString([]byte(payload))
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(signed))
	return signed + "." + b64.EncodeToString(m.Sum(nil))
}

// reheader replaces a token's header, keeping its payload and signature.
func reheader(tok, header string) string {
	_, rest, _ := strings.Cut(tok, ".")
	return b64.EncodeToString([]byte(header)) + "." + rest
}

// payloadOf decodes a token's payload into a map.
func payloadOf(t testing.TB, tok string) map[string]any {
	t.Helper()
	seg := strings.Split(tok, ".")[1]
	raw, err := b64.DecodeString(seg)
	if err != nil {
		t.Fatalf("decode payload: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("unmarshal payload: %v", err)
	}
	return m
}

// repayload replaces a token's payload, keeping its header and signature.
func repayload(t testing.TB, tok string, p map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("marshal payload: %v", err)
	}
	parts := strings.Split(tok, ".")
	return parts[0] + "." + b64.EncodeToString(raw) + "." + parts[2]
}
