package secrets

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
)

// rule is one way to find a secret: matches of re whose group (0: the
// first non-empty group, or the whole match when there is none; lastGroup:
// the last non-empty one) is the secret. keywords are lower-case; the rule runs only on text holding one.
const lastGroup = -1

type rule struct {
	id       string
	re       *regexp.Regexp
	group    int
	keywords []string
	entropy  float64 // a secret must have more (Shannon, bits per rune); 0: any
	allow    []*config.Allowlist
	wide     bool // a match may be longer than a few lines: never run in windows
	// skip, when set, rejects a finding whose match and secret it judges
	// harmless.
	skip func(match, secret string) bool
	// assigns: a match is a label, then an assignment (= : > | ,) within
	// a few characters, then the secret: the rule runs only around a
	// keyword with an assignment nearby (see assignmentNear).
	assigns bool
}

// assignmentTemplate is the part of gitleaks' semi-generic rules (label,
// up to 23 characters, an assignment) that makes assigns true for them.
const assignmentTemplate = `[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)`

// spineRules are the shapes gitleaks' defaults miss or redact too widely:
// a label followed by its value (only the value goes), URL credentials,
// private key bodies, and bare prefixes spine has always caught.
var spineRules = []rule{
	// "Authorization: Basic abc" keeps its scheme, also where Go prints a
	// header map (map[Authorization:[Basic abc]]) or JSON an array of values. The credential may be
	// [REDACTED] already: a second pass finds the same span and changes
	// nothing.
	{id: "spine-authorization", group: 1, keywords: []string{"authorization"},
		re: regexp.MustCompile(`(?i)\bauthorization[\\"']{0,2}\s*[:=]\s*[\[\s\\"']{0,4}(?:(?:bearer|basic|token|digest|negotiate|ntlm|oauth|hawk|apikey|api-key|key|sso-key|ssws|splunk|aws4-hmac-sha256)[ \t]+)?(\[REDACTED\]|[^\s"',;\\\[\]]+)`)},
	{id: "spine-bearer", group: 1, keywords: []string{"bearer"},
		re: regexp.MustCompile(`(?i)\bbearer[ \t]+([A-Za-z0-9\-._~+/]{8,}=*)`)},
	{id: "spine-labelled", group: 1, assigns: true, keywords: []string{"key", "token", "secret", "passw", "pwd"},
		re:   regexp.MustCompile(`(?i)\b[a-z0-9_.-]*?(?:api[_-]?key|apikey|access[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|secret[_-]?key|secret[_-]?access[_-]?key|client[_-]?secret|private[_-]?key|password|passwd|pwd|secret|token)[\\"']{0,2}[ \t]{0,16}[:=][ \t]*[\\"']{0,2}([^\s"',;&\\\[\]$<{(/@-][^\s"',;&\\@]{3,})`),
		skip: countOfTokens},
	{id: "spine-url-credentials", group: 1, keywords: []string{"://"},
		re: regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s/:@"'<>\\]*:([^\s/@"'<>\\]+)@`)},
	{id: "spine-private-key", group: 1, wide: true, keywords: []string{"private key"},
		re: regexp.MustCompile(`(?s)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(.+?)-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----`)},
	{id: "spine-private-key-unterminated", group: 1, wide: true, keywords: []string{"private key"},
		re: regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----\s*([A-Za-z0-9+/=\s\\]{16,})`)},
	{id: "spine-openai-anthropic", keywords: []string{"sk-"},
		re: regexp.MustCompile(`\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}`)},
	{id: "spine-github", keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		re: regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}`)},
	{id: "spine-slack", keywords: []string{"xox"},
		re: regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9\-]{10,}`)},
	{id: "spine-aws-key-id", keywords: []string{"akia", "asia", "abia", "acca", "aroa", "aida", "agpa", "anpa", "anva", "apka", "aipa"},
		re: regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA|AGPA|ANPA|ANVA|APKA|AIPA)[0-9A-Z]{16}\b`)},
	{id: "spine-google", keywords: []string{"aiza"},
		re: regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}\b`)},
	{id: "spine-jwt", keywords: []string{"eyj"},
		re: regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`)},
}

// countOfTokens: "max_tokens: 4096" is a count, not a token. A value of
// digits only after a label that says token is taken for a number.
func countOfTokens(match, secret string) bool {
	return strings.Contains(strings.ToLower(match), "token") && strings.Trim(secret, "0123456789") == ""
}

// superseded are gitleaks rules a spine rule does more precisely.
var superseded = map[string]bool{"private-key": true}

// gitleaksRules loads gitleaks' default configuration the way gitleaks
// itself does (viper over the embedded TOML) and keeps the rules that look
// at content. Rules that only name files, and rules kept only as another
// rule's companion (SkipReport), say nothing about a string.
// Its global allowlists (placeholders, example keys) travel with each of its
// rules; spine's own rules have none, so "EXAMPLE" in a labelled AWS secret
// does not save it. Its private-key rule takes the whole block, headers
// included; spine's keeps the BEGIN and END lines and takes the body.
func gitleaksRules() ([]rule, error) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return nil, fmt.Errorf("read gitleaks rules: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, fmt.Errorf("decode gitleaks rules: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, fmt.Errorf("compile gitleaks rules: %w", err)
	}
	var rules []rule
	for _, id := range cfg.OrderedRules {
		r := cfg.Rules[id]
		if r.Regex == nil || r.Path != nil || r.SkipReport || superseded[r.RuleID] {
			continue
		}
		rules = append(rules, rule{id: r.RuleID, re: r.Regex, group: r.SecretGroup,
			assigns:  strings.Contains(r.Regex.String(), assignmentTemplate),
			keywords: r.Keywords, entropy: r.Entropy, allow: append(append([]*config.Allowlist(nil), cfg.Allowlists...), r.Allowlists...)})
	}
	return rules, nil
}
