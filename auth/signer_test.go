package auth_test

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spinehq/spine/auth"
)

const memberPayload = `{"iss":"spine","aud":"spine","sub":"ada","org":"acme","member":"ada","iat":1735689600,"exp":1735776000,"jti":"00"}`

func TestRoundTrip(t *testing.T) {
	s := newTestSigner(t, testSecret)
	tok := mint(t, s, auth.Claims{Org: "acme", Member: "ada@example.com"})
	got, err := s.Verify(tok, auth.AudienceMember, verifyTime)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	want := auth.Claims{Org: "acme", Member: "ada@example.com", Role: auth.RoleMember, Audience: "spine", ID: got.ID,
		IssuedAt: mintTime, ExpiresAt: mintTime.Add(24 * time.Hour)}
	if got != want {
		t.Fatalf("claims = %+v, want %+v", got, want)
	}
	if b, err := hex.DecodeString(got.ID); err != nil || len(b) != 16 {
		t.Fatalf("ID %q is not 16 bytes of hex", got.ID)
	}
	p := payloadOf(t, tok)
	if p["iss"] != "spine" || p["sub"] != "ada@example.com" || p["member"] != "ada@example.com" {
		t.Fatalf("payload = %v", p)
	}
}

func TestMintFreshIDs(t *testing.T) {
	s, err := auth.NewSigner(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Verify(mint(t, s, auth.Claims{Org: "o", Member: "m"}), "spine", time.Now())
	b, _ := s.Verify(mint(t, s, auth.Claims{Org: "o", Member: "m"}), "spine", time.Now())
	if a.ID == "" || a.ID == b.ID {
		t.Fatalf("ids %q and %q: want two different non-empty ids", a.ID, b.ID)
	}
}

func TestOtherAudience(t *testing.T) {
	s := newTestSigner(t, testSecret)
	tok := mint(t, s, auth.Claims{Org: "acme", Member: "ada", Audience: "spine-runner"})
	if _, err := s.Verify(tok, "spine-runner", verifyTime); err != nil {
		t.Fatalf("Verify as spine-runner: %v", err)
	}
	if _, err := s.Verify(tok, auth.AudienceMember, verifyTime); !errors.Is(err, auth.ErrAudience) {
		t.Fatalf("runner token as member token: err = %v, want ErrAudience", err)
	}
}

func TestWrongAudience(t *testing.T) {
	s := newTestSigner(t, testSecret)
	tok := mint(t, s, auth.Claims{Org: "acme", Member: "ada"})
	for _, aud := range []string{"spine-runner", "", "SPINE", "spine "} {
		if _, err := s.Verify(tok, aud, verifyTime); !errors.Is(err, auth.ErrAudience) {
			t.Fatalf("audience %q: err = %v, want ErrAudience", aud, err)
		}
	}
}

func TestTamperedPayload(t *testing.T) {
	s := newTestSigner(t, testSecret)
	tok := mint(t, s, auth.Claims{Org: "acme", Member: "ada"})
	for _, edit := range []struct{ key, value string }{
		{"member", "eve"}, {"org", "evil"}, {"aud", "spine-runner"},
	} {
		p := payloadOf(t, tok)
		p[edit.key] = edit.value
		if _, err := s.Verify(repayload(t, tok, p), "spine", verifyTime); !errors.Is(err, auth.ErrSignature) {
			t.Fatalf("%s edited: err = %v, want ErrSignature", edit.key, err)
		}
	}
	p := payloadOf(t, tok)
	p["exp"] = p["exp"].(float64) + 365*24*3600
	if _, err := s.Verify(repayload(t, tok, p), "spine", verifyTime); !errors.Is(err, auth.ErrSignature) {
		t.Fatalf("exp extended: err = %v, want ErrSignature", err)
	}
}

func TestTamperedSignature(t *testing.T) {
	s := newTestSigner(t, testSecret)
	tok := mint(t, s, auth.Claims{Org: "acme", Member: "ada"})
	i := strings.LastIndexByte(tok, '.') + 1
	flipped := tok[:i] + string(tok[i]^1) + tok[i+1:]
	if _, err := s.Verify(flipped, "spine", verifyTime); !errors.Is(err, auth.ErrSignature) {
		t.Fatalf("flipped signature: err = %v, want ErrSignature", err)
	}
}

// A signature's last character carries two padding bits. A lax decoder maps
// four spellings to the same MAC; Verify must accept only the canonical one.
func TestNonCanonicalSignature(t *testing.T) {
	s := newTestSigner(t, testSecret)
	tok := mint(t, s, auth.Claims{Org: "acme", Member: "ada"})
	last := strings.IndexByte(b64alphabet, tok[len(tok)-1])
	other := tok[:len(tok)-1] + string(b64alphabet[last|1])
	want, _ := b64.DecodeString(tok[strings.LastIndexByte(tok, '.')+1:])
	got, err := b64.DecodeString(other[strings.LastIndexByte(other, '.')+1:])
	if err != nil || string(got) != string(want) {
		t.Fatalf("test setup: lax decoding differs (%v)", err)
	}
	if _, err := s.Verify(other, "spine", verifyTime); !errors.Is(err, auth.ErrMalformed) {
		t.Fatalf("non-canonical signature: err = %v, want ErrMalformed", err)
	}
}

const b64alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func TestWrongSecret(t *testing.T) {
	tok := mint(t, newTestSigner(t, testSecret), auth.Claims{Org: "acme", Member: "ada"})
	other := newTestSigner(t, []byte(strings.Repeat("x", 32)))
	if _, err := other.Verify(tok, "spine", verifyTime); !errors.Is(err, auth.ErrSignature) {
		t.Fatalf("err = %v, want ErrSignature", err)
	}
}

func TestAlgorithms(t *testing.T) {
	s := newTestSigner(t, testSecret)
	tok := mint(t, s, auth.Claims{Org: "acme", Member: "ada"})
	noneSigned := forge(testSecret, `{"alg":"none"}`, memberPayload)
	noneSigned = noneSigned[:strings.LastIndexByte(noneSigned, '.')+1] // empty signature
	for name, bad := range map[string]string{
		"none, empty signature":     noneSigned,
		"none, our signature":       reheader(tok, `{"alg":"none","typ":"JWT"}`),
		"None":                      reheader(tok, `{"alg":"None"}`),
		"lowercase hs256":           reheader(tok, `{"alg":"hs256","typ":"JWT"}`),
		"HS512":                     reheader(tok, `{"alg":"HS512","typ":"JWT"}`),
		"RS256":                     reheader(tok, `{"alg":"RS256","typ":"JWT"}`),
		"no alg":                    reheader(tok, `{"typ":"JWT"}`),
		"none re-signed by us (!)":  forge(testSecret, `{"alg":"none"}`, memberPayload),
		"alg as a list of HS256":    reheader(tok, `{"alg":["HS256"]}`),
		"header is not JSON object": reheader(tok, `"HS256"`),
	} {
		_, err := s.Verify(bad, "spine", verifyTime)
		if !errors.Is(err, auth.ErrAlgorithm) && !errors.Is(err, auth.ErrMalformed) {
			t.Fatalf("%s: err = %v, want ErrAlgorithm or ErrMalformed", name, err)
		}
	}
}

func TestExpired(t *testing.T) {
	s := newTestSigner(t, testSecret)
	tok := mint(t, s, auth.Claims{Org: "acme", Member: "ada"})
	exp := mintTime.Add(24 * time.Hour)
	if _, err := s.Verify(tok, "spine", exp.Add(-time.Second)); err != nil {
		t.Fatalf("a second before exp: %v", err)
	}
	for _, now := range []time.Time{exp, exp.Add(time.Hour)} {
		if _, err := s.Verify(tok, "spine", now); !errors.Is(err, auth.ErrExpired) {
			t.Fatalf("at %v: err = %v, want ErrExpired", now, err)
		}
	}
}

func TestNotYetValid(t *testing.T) {
	s := newTestSigner(t, testSecret)
	tok := mint(t, s, auth.Claims{Org: "acme", Member: "ada"})
	if _, err := s.Verify(tok, "spine", mintTime.Add(-30*time.Second)); err != nil {
		t.Fatalf("clock 30s behind: %v", err)
	}
	if _, err := s.Verify(tok, "spine", mintTime.Add(-2*time.Minute)); !errors.Is(err, auth.ErrNotYetValid) {
		t.Fatalf("clock 2m behind: err = %v, want ErrNotYetValid", err)
	}
}

func TestMalformed(t *testing.T) {
	s := newTestSigner(t, testSecret)
	tok := mint(t, s, auth.Claims{Org: "acme", Member: "ada"})
	parts := strings.Split(tok, ".")
	for name, bad := range map[string]string{
		"empty":            "",
		"one dot":          ".",
		"two dots":         "..",
		"no dots":          "abc",
		"two segments":     parts[0] + "." + parts[1],
		"four segments":    tok + "." + parts[2],
		"junk":             "a.b.c",
		"padded":           tok + "=",
		"std alphabet":     strings.NewReplacer("-", "+", "_", "/").Replace(tok) + "+",
		"space":            " " + tok,
		"short signature":  parts[0] + "." + parts[1] + "." + parts[2][:20],
		"payload not JSON": forge(testSecret, `{"alg":"HS256"}`, `nope`),
		"huge":             strings.Repeat("a", 5000) + "." + parts[1] + "." + parts[2],
	} {
		if _, err := s.Verify(bad, "spine", verifyTime); !errors.Is(err, auth.ErrMalformed) {
			t.Fatalf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

// Tokens carrying our signature but claims we would never mint are refused:
// a leaked secret aside, this guards Verify against its own Mint drifting.
func TestSignedButInvalidClaims(t *testing.T) {
	s := newTestSigner(t, testSecret)
	good := forge(testSecret, `{"alg":"HS256","typ":"JWT"}`, memberPayload)
	if _, err := s.Verify(good, "spine", verifyTime); err != nil {
		t.Fatalf("forged well-formed token: %v", err)
	}
	for name, edit := range map[string][2]string{
		"no org":          {`"org":"acme",`, ``},
		"empty member":    {`"member":"ada"`, `"member":""`},
		"no member":       {`,"member":"ada"`, ``},
		"sub not member":  {`"sub":"ada"`, `"sub":"eve"`},
		"other issuer":    {`"iss":"spine"`, `"iss":"other"`},
		"aud as list":     {`"aud":"spine"`, `"aud":["spine"]`},
		"org with slash":  {`"org":"acme"`, `"org":"ac/me"`},
		"no jti":          {`,"jti":"00"`, ``},
		"exp before iat":  {`"exp":1735776000`, `"exp":1735689000`},
		"no exp":          {`,"exp":1735776000`, ``},
		"fractional iat":  {`"iat":1735689600`, `"iat":1735689600.5`},
		"org is a number": {`"org":"acme"`, `"org":7`},
	} {
		tok := forge(testSecret, `{"alg":"HS256","typ":"JWT"}`, strings.Replace(memberPayload, edit[0], edit[1], 1))
		if _, err := s.Verify(tok, "spine", verifyTime); !errors.Is(err, auth.ErrMalformed) {
			t.Fatalf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	jwe := forge(testSecret, `{"alg":"HS256","typ":"JWE"}`, memberPayload)
	if _, err := s.Verify(jwe, "spine", verifyTime); !errors.Is(err, auth.ErrMalformed) {
		t.Fatalf("typ JWE: err = %v, want ErrMalformed", err)
	}
}

func TestMintRejects(t *testing.T) {
	s := newTestSigner(t, testSecret)
	for name, c := range map[string]auth.Claims{
		"no org":          {Member: "ada"},
		"no member":       {Org: "acme"},
		"space in member": {Org: "acme", Member: "ada lovelace"},
		"slash in org":    {Org: "ac/me", Member: "ada"},
		"long member":     {Org: "acme", Member: strings.Repeat("a", 129)},
		"odd audience":    {Org: "acme", Member: "ada", Audience: "spine runner"},
		"unicode org":     {Org: "acmé", Member: "ada"},
	} {
		if _, err := s.Mint(c, time.Hour); !errors.Is(err, auth.ErrClaims) {
			t.Fatalf("%s: err = %v, want ErrClaims", name, err)
		}
	}
	if _, err := s.Mint(auth.Claims{Org: "acme", Member: "ada"}, 0); !errors.Is(err, auth.ErrClaims) {
		t.Fatalf("zero ttl: err = %v, want ErrClaims", err)
	}
	if _, err := s.Mint(auth.Claims{Org: "acme", Member: strings.Repeat("a", 128)}, time.Hour); err != nil {
		t.Fatalf("128-char member: %v", err)
	}
}

func TestNewSignerShortSecret(t *testing.T) {
	if _, err := auth.NewSigner(make([]byte, 31)); !errors.Is(err, auth.ErrShortSecret) {
		t.Fatalf("31 bytes: err = %v, want ErrShortSecret", err)
	}
	if _, err := auth.NewSigner(make([]byte, 32)); err != nil {
		t.Fatalf("32 bytes: %v", err)
	}
}

// The signer keeps its own copy: zeroing the caller's slice changes nothing.
func TestNewSignerCopiesSecret(t *testing.T) {
	secret := append([]byte(nil), testSecret...)
	s := newTestSigner(t, secret)
	tok := mint(t, s, auth.Claims{Org: "acme", Member: "ada"})
	clear(secret)
	if _, err := s.Verify(tok, "spine", verifyTime); err != nil {
		t.Fatalf("after clearing caller's secret: %v", err)
	}
}

func TestRoles(t *testing.T) {
	s := newTestSigner(t, testSecret)
	admin, err := s.Verify(mint(t, s, auth.Claims{Org: "acme", Member: "ada", Role: auth.RoleAdmin}), auth.AudienceMember, verifyTime)
	if err != nil || !admin.IsAdmin() {
		t.Fatalf("admin token: claims %+v, err %v; want an admin", admin, err)
	}
	// A token minted before roles existed is a member's, never an admin's.
	old, err := s.Verify(forge(testSecret, `{"alg":"HS256","typ":"JWT"}`, memberPayload), auth.AudienceMember, verifyTime)
	if err != nil || old.IsAdmin() || old.Role != auth.RoleMember {
		t.Fatalf("token without a role: claims %+v, err %v; want a member", old, err)
	}
	if _, err := s.Mint(auth.Claims{Org: "acme", Member: "ada", Role: "root"}, time.Hour); !errors.Is(err, auth.ErrClaims) {
		t.Fatalf("mint role root: err = %v, want ErrClaims", err)
	}
	forged := forge(testSecret, `{"alg":"HS256","typ":"JWT"}`, strings.Replace(memberPayload, `"member":"ada",`, `"member":"ada","role":"root",`, 1))
	if _, err := s.Verify(forged, auth.AudienceMember, verifyTime); !errors.Is(err, auth.ErrMalformed) {
		t.Fatalf("role root: err = %v, want ErrMalformed", err)
	}
}

// A billing claim survives the round trip; a value spine never mints is
// refused by Mint and, signed, by Verify.
func TestBillingClaim(t *testing.T) {
	s := newTestSigner(t, testSecret)
	for _, b := range auth.Billings {
		c, err := s.Verify(mint(t, s, auth.Claims{Org: "acme", Member: "ada", Billing: b}), auth.AudienceMember, verifyTime)
		if err != nil || c.Billing != b {
			t.Fatalf("billing %s: claims %+v, err %v", b, c, err)
		}
	}
	if c, _ := s.Verify(mint(t, s, auth.Claims{Org: "acme", Member: "ada"}), auth.AudienceMember, verifyTime); c.Billing != "" {
		t.Fatalf("no billing minted: claims say %q", c.Billing)
	}
	if _, err := s.Mint(auth.Claims{Org: "acme", Member: "ada", Billing: "free"}, time.Hour); !errors.Is(err, auth.ErrClaims) {
		t.Fatalf("mint billing free: err = %v, want ErrClaims", err)
	}
	forged := forge(testSecret, `{"alg":"HS256","typ":"JWT"}`, strings.Replace(memberPayload, `"member":"ada",`, `"member":"ada","billing":"free",`, 1))
	if _, err := s.Verify(forged, auth.AudienceMember, verifyTime); !errors.Is(err, auth.ErrMalformed) {
		t.Fatalf("billing free: err = %v, want ErrMalformed", err)
	}
}

// An org's ingest token opens no member route, and a member's token is no
// ingest token.
func TestIngestAudience(t *testing.T) {
	s := newTestSigner(t, testSecret)
	ingest := mint(t, s, auth.Claims{Org: "acme", Member: "ada", Role: auth.RoleAdmin, Audience: auth.AudienceIngest})
	if c, err := s.Verify(ingest, auth.AudienceIngest, verifyTime); err != nil || c.Audience != auth.AudienceIngest {
		t.Fatalf("ingest token as ingest: claims %+v, err %v", c, err)
	}
	if _, err := s.Verify(ingest, auth.AudienceMember, verifyTime); !errors.Is(err, auth.ErrAudience) {
		t.Fatalf("ingest token as member token: err = %v, want ErrAudience", err)
	}
	member := mint(t, s, auth.Claims{Org: "acme", Member: "ada", Role: auth.RoleAdmin})
	if _, err := s.Verify(member, auth.AudienceIngest, verifyTime); !errors.Is(err, auth.ErrAudience) {
		t.Fatalf("member token as ingest token: err = %v, want ErrAudience", err)
	}
}
