package secrets

import (
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/zricethezav/gitleaks/v8/config"
)

// Redacted replaces every secret.
const Redacted = "[REDACTED]"

// Redactor finds and replaces secrets. It is safe for concurrent use.
type Redactor struct {
	rules  []rule
	words  *keywords
	byWord [][]int // keyword index → rules that need it
	always []int   // rules without keywords
	// scanned counts the bytes rules and line searches have read: the
	// tests prove redaction linear with it, never with a clock.
	scanned atomic.Int64
	// print is Fingerprint's, made once.
	printOnce sync.Once
	print     string
}

var (
	defaultOnce sync.Once
	defaultR    *Redactor
)

// Default is the redactor every door uses: gitleaks' default rules and
// spine's own, compiled once, on first use.
func Default() *Redactor {
	defaultOnce.Do(func() {
		gl, err := gitleaksRules()
		if err != nil {
			// The rule set is embedded in the binary: failing to load it
			// is a build defect, and running without it would store keys.
			panic(err)
		}
		defaultR = newRedactor(append(append([]rule(nil), spineRules...), gl...))
	})
	return defaultR
}

func newRedactor(rules []rule) *Redactor {
	r := &Redactor{rules: rules}
	index := map[string]int{}
	var words []string
	for i, ru := range rules {
		if len(ru.keywords) == 0 {
			r.always = append(r.always, i)
		}
		for _, k := range ru.keywords {
			w, ok := index[k]
			if !ok {
				w = len(words)
				index[k] = w
				words = append(words, k)
				r.byWord = append(r.byWord, nil)
			}
			r.byWord[w] = append(r.byWord[w], i)
		}
	}
	r.words = newKeywords(words)
	return r
}

// String returns s with every secret replaced by Redacted. Text without
// any is returned as is, without a copy.
func String(s string) string { return Default().String(s) }

// String is the package's String for r.
func (r *Redactor) String(s string) string {
	spans := r.find(s)
	if len(spans) == 0 {
		return s
	}
	return replace(s, spans)
}

// Contains reports whether s holds a secret any rule finds.
func (r *Redactor) Contains(s string) bool { return len(r.find(s)) > 0 }

type span struct{ start, end int }

// find lists the secrets' byte ranges in s, sorted and merged.
func (r *Redactor) find(s string) []span {
	if s == "" {
		return nil
	}
	var spans []span
	for _, c := range r.candidates(s) {
		ru := &r.rules[c.rule]
		if ru.wide || c.whole {
			spans = ru.find(s, 0, len(s), spans, &r.scanned)
			continue
		}
		for _, w := range merge(c.windows) {
			spans = ru.find(s, w.start, w.end, spans, &r.scanned)
		}
	}
	return merge(spans)
}

// candidate is a rule whose keywords occur in the text, with the windows
// around each occurrence, or whole: run over the whole text.
type candidate struct {
	rule    int
	whole   bool
	windows []span
}

// candidates are the rules whose keywords occur in s: one pass of the
// keyword automaton. Regexps then run only around the keywords, a line
// either side: gitleaks' generic rule costs milliseconds per kilobyte over
// a whole text, microseconds over a line. Non-ASCII text is folded first,
// which may change byte lengths: a folded offset is mapped back to s
// before its window is cut, so one é does not send every rule over the
// whole text.
func (r *Redactor) candidates(s string) []candidate {
	text, back := s, offsets(nil)
	if !isASCII(s) {
		text, back = fold(s)
	}
	var idx map[int]int // rule → index in out
	var out []candidate
	get := func(rule int) *candidate {
		if idx == nil {
			idx = map[int]int{}
		}
		k, ok := idx[rule]
		if !ok {
			k = len(out)
			idx[rule] = k
			out = append(out, candidate{rule: rule})
		}
		return &out[k]
	}
	for _, i := range r.always {
		get(i).whole = true
	}
	var nl lines
	r.words.walk(text, func(word, start, end int) {
		start, end = back.orig(start, len(s)), back.orig(end, len(s))
		if nl == nil {
			nl = newLines(s)
		}
		w, near := nl.window(s, start, end), assignmentNear(s, start, end)
		for _, i := range r.byWord[word] {
			c := get(i)
			if (r.rules[i].assigns && !near) || c.whole {
				continue
			}
			c.windows = extend(c.windows, w)
		}
	})
	return out
}

// extend appends w to windows, joining it to the last one where they
// overlap: hits arrive in order, so a line full of keywords makes one
// window, and every byte is scanned once per rule, not once per hit.
func extend(windows []span, w span) []span {
	if n := len(windows); n > 0 && w.start <= windows[n-1].end {
		windows[n-1].end = max(windows[n-1].end, w.end)
		windows[n-1].start = min(windows[n-1].start, w.start)
		return windows
	}
	return append(windows, w)
}

// assignmentNear reports whether an assignment character (= : > | ,) is
// within reach of the keyword at [start, end): before it, where the keyword
// is part of the secret, or after it, where it is part of the label. A rule
// that assigns cannot match a keyword without one, so clean code that only
// mentions a token costs no regexp.
func assignmentNear(s string, start, end int) bool {
	return strings.ContainsAny(s[max(0, start-assignBefore):min(len(s), end+assignAfter)], "=:>|,")
}

// How far assignmentNear looks: gitleaks' semi-generic rules allow 20
// characters and 3 quotes between label and assignment, spine's labels
// 16 spaces and 2 quotes after a label of up to 17 characters.
const (
	assignBefore = 80
	assignAfter  = 96
)

// Context a window keeps around a keyword: a line either side, and at
// most windowReach bytes each way on a long line (minified JSON).
const windowReach = 2048

// lines are the offsets of a text's newlines, found once per text so
// that cutting a window is a binary search, not a scan back to the start
// of the line for every keyword.
type lines []int

func newLines(s string) lines {
	nl := lines{}
	for i := 0; ; {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return nl
		}
		nl = append(nl, i+j)
		i += j + 1
	}
}

// window is [start, end) with the line before and the line after, at
// most windowReach bytes each way.
func (nl lines) window(s string, start, end int) span {
	lo := 0
	if k := sort.SearchInts(nl, start); k > 1 {
		lo = nl[k-2] + 1
	}
	hi := len(s)
	if k := sort.SearchInts(nl, end); k+1 < len(nl) {
		hi = nl[k+1]
	}
	lo, hi = max(lo, start-windowReach), min(hi, end+windowReach)
	for lo > 0 && !utf8.RuneStart(s[lo]) {
		lo--
	}
	for hi < len(s) && !utf8.RuneStart(s[hi]) {
		hi++
	}
	return span{lo, hi}
}

// lineStart and lineEnd find the line around i, looking at most
// windowReach bytes: gitleaks' line allowlists see a long line's
// neighbourhood, never the whole of it.
func lineStart(s string, i int) int {
	lo := max(0, i-windowReach)
	return lo + strings.LastIndexByte(s[lo:i], '\n') + 1
}

func lineEnd(s string, i int) int {
	hi := min(len(s), i+windowReach)
	if j := strings.IndexByte(s[i:hi], '\n'); j >= 0 {
		return i + j
	}
	return hi
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// fold lower-cases non-ASCII text the way the rules' (?i) compares it:
// besides unicode.ToLower, the Kelvin sign matches k and the long s
// matches s, so "ſecret" cannot slip past the keyword "secret". It
// returns where byte lengths changed, to map offsets back.
func fold(s string) (string, offsets) {
	var b strings.Builder
	b.Grow(len(s))
	var back offsets
	for i, c := range s {
		n := utf8.RuneLen(c)
		if c == utf8.RuneError {
			_, n = utf8.DecodeRuneInString(s[i:])
		}
		switch c {
		case '\u212A':
			c = 'k'
		case '\u017F':
			c = 's'
		default:
			c = unicode.ToLower(c)
		}
		b.WriteRune(c)
		if utf8.RuneLen(c) != n {
			back = append(back, checkpoint{folded: b.Len(), orig: i + n})
		}
	}
	return b.String(), back
}

// offsets are the points after which folded and original offsets differ.
type offsets []checkpoint

type checkpoint struct{ folded, orig int }

// orig maps an offset in the folded text back to the original of length n.
func (o offsets) orig(folded, n int) int {
	k := sort.Search(len(o), func(k int) bool { return o[k].folded > folded }) - 1
	if k < 0 {
		return min(folded, n)
	}
	return min(o[k].orig+folded-o[k].folded, n)
}

// find appends to spans the secrets this rule finds in s[lo:hi].
func (ru *rule) find(whole string, lo, hi int, spans []span, scanned *atomic.Int64) []span {
	s := whole[lo:hi]
	scanned.Add(int64(hi - lo))
	for _, m := range ru.re.FindAllStringIndex(s, -1) {
		sp, ok := ru.secret(s, m[0], m[1])
		if !ok || sp.end <= sp.start {
			continue
		}
		if inMarker(s, sp) {
			continue
		}
		secret := s[sp.start:sp.end]
		if ru.skip != nil && ru.skip(s[m[0]:m[1]], secret) {
			continue
		}
		if ru.entropy > 0 && entropy(secret) <= ru.entropy {
			continue
		}
		if allowed(ru.allow, secret, s[m[0]:m[1]], func() string { return line(s, m[0], m[1]) }) {
			continue
		}
		spans = append(spans, span{lo + sp.start, lo + sp.end})
	}
	return spans
}

// inMarker reports whether sp lies inside a Redacted marker: a second
// pass must change nothing, whichever part of the marker a rule takes.
func inMarker(s string, sp span) bool {
	for i := max(0, sp.start-len(Redacted)+1); i <= sp.start; i++ {
		if strings.HasPrefix(s[i:], Redacted) && sp.end <= i+len(Redacted) {
			return true
		}
	}
	return false
}

// secret narrows the match [start, end) to the rule's secret group, as
// gitleaks does: the group numbered, else the first non-empty one, else
// the whole match.
func (ru *rule) secret(s string, start, end int) (span, bool) {
	g := ru.re.FindStringSubmatchIndex(s[start:end])
	if g == nil {
		return span{start, end}, true
	}
	if ru.group == lastGroup {
		for k := len(g) - 2; k >= 2; k -= 2 {
			if g[k] >= 0 && g[k+1] > g[k] {
				return span{start + g[k], start + g[k+1]}, true
			}
		}
		return span{}, false
	}
	if ru.group > 0 {
		if 2*ru.group+1 >= len(g) || g[2*ru.group] < 0 {
			return span{}, false
		}
		return span{start + g[2*ru.group], start + g[2*ru.group+1]}, true
	}
	for k := 2; k+1 < len(g); k += 2 {
		if g[k] >= 0 && g[k+1] > g[k] {
			return span{start + g[k], start + g[k+1]}, true
		}
	}
	return span{start, end}, true
}

// allowed applies gitleaks' allowlists to one finding. Lists that name
// commits or paths cannot match a string that has neither: under "AND"
// such a list never allows, under "OR" only its regexes and stop words count.
func allowed(lists []*config.Allowlist, secret, match string, line func() string) bool {
	for _, a := range lists {
		target := secret
		switch a.RegexTarget {
		case "match":
			target = match
		case "line":
			target = line()
		}
		regex := len(a.Regexes) > 0 && a.RegexAllowed(target)
		stop, _ := a.ContainsStopWord(secret)
		stop = stop && len(a.StopWords) > 0
		if a.MatchCondition == config.AllowlistMatchAnd {
			if len(a.Commits) == 0 && len(a.Paths) == 0 && (len(a.Regexes) > 0 || len(a.StopWords) > 0) &&
				(regex || len(a.Regexes) == 0) && (stop || len(a.StopWords) == 0) {
				return true
			}
			continue
		}
		if regex || stop {
			return true
		}
	}
	return false
}

// line is the line of s around [start, end).
func line(s string, start, end int) string { return s[lineStart(s, start):lineEnd(s, end)] }

func entropy(s string) float64 {
	counts := map[rune]int{}
	for _, c := range s {
		counts[c]++
	}
	var e float64
	n := float64(len(s))
	for _, c := range counts {
		f := float64(c) / n
		e -= f * math.Log2(f)
	}
	return e
}

// merge sorts spans and joins those that overlap or touch.
func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.start <= last.end {
			last.end = max(last.end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

func replace(s string, spans []span) string {
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for _, sp := range spans {
		b.WriteString(s[prev:sp.start])
		b.WriteString(Redacted)
		prev = sp.end
	}
	b.WriteString(s[prev:])
	return b.String()
}
