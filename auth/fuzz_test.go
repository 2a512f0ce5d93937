package auth_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spinehq/spine/auth"
)

var update = flag.Bool("update", false, "rewrite testdata/fuzz/FuzzVerify from fuzzSeeds")

const corpusDir = "testdata/fuzz/FuzzVerify"

// fuzzSeeds returns the seed corpus by file name, and the tokens among them
// that s minted. s must be fresh from newTestSigner, so the tokens are the
// same on every run.
func fuzzSeeds(t testing.TB, s *auth.Signer) (seeds map[string]string, minted map[string]bool) {
	member := mint(t, s, auth.Claims{Org: "acme", Member: "ada@example.com"})
	runner := mint(t, s, auth.Claims{Org: "acme", Member: "ada", Audience: "spine-runner"})
	parts := strings.Split(member, ".")
	evil := payloadOf(t, member)
	evil["member"], evil["sub"] = "eve", "eve"
	seeds = map[string]string{
		"valid-member":      member,
		"valid-runner":      runner,
		"alg-none":          reheader(member, `{"alg":"none","typ":"JWT"}`),
		"alg-none-unsigned": b64.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + ".",
		"tampered-payload":  repayload(t, member, evil),
		"foreign-secret":    forge([]byte(strings.Repeat("k", 32)), `{"alg":"HS256","typ":"JWT"}`, memberPayload),
		"two-segments":      parts[0] + "." + parts[1],
		"empty":             "",
		"dots":              "...",
		"junk":              "eyJ.eyJ.sig",
	}
	return seeds, map[string]bool{member: true, runner: true}
}

// FuzzVerify checks that no input makes Verify panic, accept a token this
// signer did not mint, return an unclassified error, or quote the input.
func FuzzVerify(f *testing.F) {
	s := newTestSigner(f, testSecret)
	_, minted := fuzzSeeds(f, s)
	for tok := range minted {
		if _, err := s.Verify(tok, auth.AudienceMember, verifyTime); err != nil {
			if _, err := s.Verify(tok, "spine-runner", verifyTime); err != nil {
				f.Fatalf("a minted seed does not verify: %v", err)
			}
		}
	}
	f.Fuzz(func(t *testing.T, token string) {
		for _, aud := range []string{auth.AudienceMember, "spine-runner"} {
			_, err := s.Verify(token, aud, verifyTime)
			if err == nil && !minted[token] {
				t.Fatalf("accepted a token the signer never minted: %q", token)
			}
			checkVerifyError(t, err, token)
		}
	})
}

func checkVerifyError(t *testing.T, err error, token string) {
	if err == nil {
		return
	}
	known := false
	for _, e := range []error{auth.ErrMalformed, auth.ErrAlgorithm, auth.ErrSignature,
		auth.ErrAudience, auth.ErrExpired, auth.ErrNotYetValid} {
		known = known || errors.Is(err, e)
	}
	if !known {
		t.Fatalf("error wraps no sentinel: %v", err)
	}
	if len(token) >= 8 && strings.Contains(err.Error(), token) {
		t.Fatalf("error quotes the token: %v", err)
	}
}

// TestFuzzVerifyCorpus keeps testdata/fuzz/FuzzVerify equal to fuzzSeeds, so
// the corpus's valid tokens stay valid under the fuzz signer. Run with
// -update after changing how tokens are minted.
func TestFuzzVerifyCorpus(t *testing.T) {
	seeds, _ := fuzzSeeds(t, newTestSigner(t, testSecret))
	for name, token := range seeds {
		path := filepath.Join(corpusDir, name)
		want := fmt.Sprintf("go test fuzz v1\nstring(%q)\n", token)
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Fatalf("%s is stale or missing (%v); run go test ./auth -run TestFuzzVerifyCorpus -update", path, err)
		}
	}
}
