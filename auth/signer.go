package auth

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// MinSecretLen is the shortest secret NewSigner accepts: HS256's full strength.
const MinSecretLen = 32

// maxTokenLen bounds what Verify will decode; our tokens are about 350 bytes.
const maxTokenLen = 4096

// skew is how far in the future a token's iat may be before Verify refuses it,
// allowing for clocks that disagree between spine replicas.
const skew = time.Minute

// header is the one JOSE header spine writes, already encoded.
var header = b64.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

// b64 rejects non-canonical encodings, so one signature has one spelling and
// a token that verifies is byte-for-byte a token we minted.
var b64 = base64.RawURLEncoding.Strict()

// Signer mints and verifies HS256 tokens under one secret. It is safe for
// concurrent use.
type Signer struct {
	secret []byte
	now    func() time.Time // Mint's clock; tests replace it
	rand   io.Reader        // source of token ids; tests replace it
}

// NewSigner returns a Signer for secret, which must hold at least
// MinSecretLen bytes. The secret is copied.
func NewSigner(secret []byte) (*Signer, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("new signer: %w", ErrShortSecret)
	}
	return &Signer{secret: append([]byte(nil), secret...), now: time.Now, rand: rand.Reader}, nil
}

// Mint returns a token for c that is valid for ttl from now. It sets c's
// IssuedAt, ExpiresAt and ID; an empty Audience means AudienceMember.
func (s *Signer) Mint(c Claims, ttl time.Duration) (string, error) {
	c.Audience = cmp.Or(c.Audience, AudienceMember)
	if err := checkMint(c, ttl); err != nil {
		return "", fmt.Errorf("mint token: %w", err)
	}
	id, err := s.newID()
	if err != nil {
		return "", fmt.Errorf("mint token: %w", err)
	}
	c.ID = id
	c.IssuedAt = s.now().Truncate(time.Second)
	c.ExpiresAt = c.IssuedAt.Add(ttl)
	body, err := json.Marshal(c.payload())
	if err != nil {
		return "", fmt.Errorf("mint token: %w", err)
	}
	signed := header + "." + b64.EncodeToString(body)
	return signed + "." + b64.EncodeToString(s.sign(signed)), nil
}

func checkMint(c Claims, ttl time.Duration) error {
	switch {
	case !idSafe(c.Org):
		return fmt.Errorf("org is not an id-safe token: %w", ErrClaims)
	case !idSafe(c.Member):
		return fmt.Errorf("member is not an id-safe token: %w", ErrClaims)
	case c.Role != "" && !slices.Contains(Roles, c.Role):
		return fmt.Errorf("role %q is not one of %v: %w", c.Role, Roles, ErrClaims)
	case c.Billing != "" && !slices.Contains(Billings, c.Billing):
		return fmt.Errorf("billing %q is not one of %v: %w", c.Billing, Billings, ErrClaims)
	case !idSafe(c.Audience):
		return fmt.Errorf("audience is not an id-safe token: %w", ErrClaims)
	case ttl < time.Second:
		return fmt.Errorf("ttl %s under one second: %w", ttl, ErrClaims)
	}
	return nil
}

func (s *Signer) newID() (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return "", fmt.Errorf("token id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func (s *Signer) sign(signed string) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(signed))
	return m.Sum(nil)
}

// Verify checks token and returns its claims. The token must be HS256, signed
// with this Signer's secret, for audience, issued no later than a minute after
// now and not expired at now. Every error wraps one of ErrMalformed,
// ErrAlgorithm, ErrSignature, ErrAudience, ErrExpired or ErrNotYetValid, and
// none holds any part of the token.
func (s *Signer) Verify(token, audience string, now time.Time) (Claims, error) {
	p, err := s.verify(token)
	if err != nil {
		return Claims{}, fmt.Errorf("verify token: %w", err)
	}
	if err := checkUse(p, audience, now); err != nil {
		return Claims{}, fmt.Errorf("verify token: %w", err)
	}
	return p.claims(), nil
}

// verify checks the token's form and signature and decodes its payload.
func (s *Signer) verify(token string) (payload, error) {
	if len(token) > maxTokenLen {
		return payload{}, fmt.Errorf("too long: %w", ErrMalformed)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return payload{}, fmt.Errorf("want 3 segments: %w", ErrMalformed)
	}
	if err := checkHeader(parts[0]); err != nil {
		return payload{}, err
	}
	if err := s.checkSignature(parts[0]+"."+parts[1], parts[2]); err != nil {
		return payload{}, err
	}
	var p payload
	if err := decodeSegment(parts[1], &p); err != nil {
		return payload{}, fmt.Errorf("payload: %w", err)
	}
	return p, p.check()
}

func checkHeader(seg string) error {
	var h struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	if err := decodeSegment(seg, &h); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if h.Alg != "HS256" {
		return ErrAlgorithm
	}
	if h.Typ != "" && h.Typ != "JWT" {
		return fmt.Errorf("header typ: %w", ErrMalformed)
	}
	return nil
}

func (s *Signer) checkSignature(signed, seg string) error {
	sig, err := b64.DecodeString(seg)
	if err != nil || len(sig) != sha256.Size {
		return fmt.Errorf("signature encoding: %w", ErrMalformed)
	}
	if !hmac.Equal(sig, s.sign(signed)) {
		return ErrSignature
	}
	return nil
}

// decodeSegment decodes one base64url JSON segment into v. Its errors are
// ErrMalformed alone: a JSON error could quote the (decoded) token.
func decodeSegment(seg string, v any) error {
	raw, err := b64.DecodeString(seg)
	if err != nil || json.Unmarshal(raw, v) != nil {
		return ErrMalformed
	}
	return nil
}

// checkUse checks that a genuine token is for audience and valid at now.
func checkUse(p payload, audience string, now time.Time) error {
	switch {
	case audience == "" || p.Aud != audience:
		return ErrAudience
	case now.Unix() >= p.Exp:
		return ErrExpired
	case time.Unix(p.Iat, 0).After(now.Add(skew)):
		return ErrNotYetValid
	}
	return nil
}
