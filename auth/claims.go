package auth

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Issuer is the iss claim of every token spine mints.
const Issuer = "spine"

// AudienceMember is the audience of tokens that act for a member of an org.
const AudienceMember = "spine"

// AudienceIngest is the audience of an org's ingest token: it opens the
// telemetry doors (/otlp/v1/…, /v1/hooks/…) and nothing else, and records
// each event as the member an org admin mapped the event's identity to
// (docs/telemetry.md). Its member is the admin who answers for it.
const AudienceIngest = "spine-ingest"

// Roles a member token can carry. A token without one is a member's: the
// claim was added after tokens were first minted, and an old token must not
// gain rights it was never given.
const (
	RoleMember = "member"
	RoleAdmin  = "admin"
)

// Roles lists the roles Mint accepts.
var Roles = []string{RoleMember, RoleAdmin}

// Billing claims a token can carry: what the apps behind it are paid by,
// when their own reports do not say (docs/telemetry.md). A token without one
// claims nothing (billing stays the apps' word, or unknown).
const (
	BillingSubscription = "subscription"
	BillingMetered      = "metered"
)

// Billings lists the billing claims Mint accepts.
var Billings = []string{BillingSubscription, BillingMetered}

// maxIDLen bounds org, member, audience and token ids.
const maxIDLen = 128

// Claims is what a token asserts.
type Claims struct {
	Org       string    // required; an id-safe token
	Member    string    // required; an id-safe token; also the JWT sub
	Audience  string    // empty: AudienceMember
	Role      string    // RoleMember or RoleAdmin; empty: RoleMember
	Billing   string    // BillingSubscription, BillingMetered, or empty: no claim
	ID        string    // jti; Mint sets it (16 random bytes, hex)
	IssuedAt  time.Time // Mint sets it
	ExpiresAt time.Time // Mint sets it to IssuedAt + ttl
}

// IsAdmin reports whether the claims carry the org admin role.
func (c Claims) IsAdmin() bool { return c.Role == RoleAdmin }

// payload is the JSON body of a token, in the order it is written.
type payload struct {
	Iss    string `json:"iss"`
	Aud    string `json:"aud"`
	Sub    string `json:"sub"`
	Org    string `json:"org"`
	Member string `json:"member"`
	Role   string `json:"role,omitempty"`
	Bill   string `json:"billing,omitempty"`
	Iat    int64  `json:"iat"`
	Exp    int64  `json:"exp"`
	Jti    string `json:"jti"`
}

func (c Claims) payload() payload {
	return payload{
		Iss: Issuer, Aud: c.Audience, Sub: c.Member, Org: c.Org, Member: c.Member, Role: c.Role, Bill: c.Billing,
		Iat: c.IssuedAt.Unix(), Exp: c.ExpiresAt.Unix(), Jti: c.ID,
	}
}

func (p payload) claims() Claims {
	return Claims{
		Org: p.Org, Member: p.Member, Role: cmp.Or(p.Role, RoleMember), Billing: p.Bill, Audience: p.Aud, ID: p.Jti,
		IssuedAt: time.Unix(p.Iat, 0).UTC(), ExpiresAt: time.Unix(p.Exp, 0).UTC(),
	}
}

// check reports the first claim of p that no token of ours could carry.
// The messages name the claim, never its value.
func (p payload) check() error {
	switch {
	case p.Iss != Issuer:
		return fmt.Errorf("issuer: %w", ErrMalformed)
	case !idSafe(p.Org) || !idSafe(p.Member):
		return fmt.Errorf("org or member: %w", ErrMalformed)
	case p.Role != "" && !slices.Contains(Roles, p.Role):
		return fmt.Errorf("role: %w", ErrMalformed)
	case p.Bill != "" && !slices.Contains(Billings, p.Bill):
		return fmt.Errorf("billing: %w", ErrMalformed)
	case p.Sub != p.Member:
		return fmt.Errorf("sub differs from member: %w", ErrMalformed)
	case p.Jti == "" || len(p.Jti) > maxIDLen:
		return fmt.Errorf("jti: %w", ErrMalformed)
	case p.Iat <= 0 || p.Exp <= p.Iat:
		return fmt.Errorf("iat or exp: %w", ErrMalformed)
	}
	return nil
}

// idSafe reports whether s is a non-empty id of at most 128 letters, digits
// and - _ . @ (so an email-like member id fits). Such an id is safe in a URL
// path and a log line; it is not a NATS subject token, since it may hold dots.
func idSafe(s string) bool {
	if s == "" || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !idByte(s[i]) {
			return false
		}
	}
	return true
}

func idByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return b == '-' || b == '_' || b == '.' || b == '@'
}
