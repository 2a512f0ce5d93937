package chromium

import (
	"encoding/json"
	"testing"
)

// Report fails the test (without stopping it) with each problem a check
// found, naming the check.
func Report(t testing.TB, check string, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Errorf("%s: %s", check, p)
	}
}

// Audit runs every check on the page and reports what they find: the
// keyboard's walk (KeyboardCheck, so call it on a page nothing has focused
// yet), the accessibility tree with the live regions given (AXCheck), and
// then, at a phone's size, what overflows sideways (Overflow). It leaves
// the tab at the phone's size, for a screenshot.
func (p *Tab) Audit(t testing.TB, live ...string) {
	t.Helper()
	Report(t, "keyboard", p.KeyboardCheck(t))
	Report(t, "screen reader", p.AXCheck(t, live...))
	p.Phone(t)
	Report(t, "phone", p.Overflow(t))
}

// describeJS names an element in a problem: its tag, id or classes, and
// the start of its label or text.
const describeJS = `const describe = el => {
  if (!el || !el.localName) return 'nothing';
  const text = (el.getAttribute('aria-label') || el.textContent || el.value || '').replace(/\s+/g, ' ').trim();
  return el.localName + (el.id ? '#' + el.id : el.classList.length ? '.' + [...el.classList].join('.') : '') +
    (el.name ? '[name=' + el.name + ']' : '') +
    (text ? ' "' + text.slice(0, 40) + (text.length > 40 ? '…' : '') + '"' : '');
};`

// evalJSON evaluates expr with describe in scope and decodes its value,
// passed through JSON, into out.
func (p *Tab) evalJSON(t testing.TB, expr string, out any) {
	t.Helper()
	got := p.Eval(t, `(() => { `+describeJS+` return JSON.stringify(`+expr+`); })()`)
	if err := json.Unmarshal([]byte(got), out); err != nil {
		t.Fatalf("decode %s: %v", got, err)
	}
}
