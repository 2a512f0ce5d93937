package chromium

import (
	"fmt"
	"testing"
)

// key is one key as the DevTools protocol types it: a key that types text
// (Enter, Space) is a keyDown with that text, one that does not (Tab) a
// rawKeyDown, as a real keyboard's are.
type key struct {
	key, code, text string
	vk              int
}

var keys = map[string]key{
	"Tab":   {key: "Tab", code: "Tab", vk: 9},
	"Enter": {key: "Enter", code: "Enter", text: "\r", vk: 13},
	"Space": {key: " ", code: "Space", text: " ", vk: 32},
}

// Press presses and releases a key ("Tab", "Enter" or "Space") in the
// tab: real key events, handled as the user's would be (Tab moves focus,
// Enter follows a link, Space toggles a <details> summary).
func (p *Tab) Press(t testing.TB, name string) {
	t.Helper()
	k, ok := keys[name]
	if !ok {
		t.Fatalf("press %q: not a key this package types", name)
	}
	down := "rawKeyDown"
	if k.text != "" {
		down = "keyDown"
	}
	for _, typ := range []string{down, "keyUp"} {
		ev := map[string]any{"type": typ, "key": k.key, "code": k.code,
			"windowsVirtualKeyCode": k.vk, "nativeVirtualKeyCode": k.vk}
		if typ == "keyDown" {
			ev["text"], ev["unmodifiedText"] = k.text, k.text
		}
		if err := p.b.call(p.session, "Input.dispatchKeyEvent", ev, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// focused is what has the keyboard focus, as focusedJS reads it.
type focused struct {
	Index   int    // in the page's list of interactive elements; -1 another element, -2 none
	What    string // the element, described
	Matches bool   // it matches the selector asked about
	Shown   bool   // a box of non-zero size, rendered and visible
	InView  bool   // inside the viewport
	InMain  bool   // inside the main landmark
	Ring    bool   // an outline is drawn around it
}

// interactiveJS lists what a keyboard must reach: every rendered link,
// button, form field and <details> summary, in document order.
const interactiveJS = `window.spineKeys = [...document.querySelectorAll(
  'a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]:not([tabindex="-1"])')]
  .filter(el => !el.disabled && el.checkVisibility({visibilityProperty: true}))`

func focusedJS(selector string) string {
	return `(() => {
  const a = document.activeElement;
  if (!a || a === document.body) return {Index: -2, What: 'nothing'};
  const r = a.getBoundingClientRect(), style = getComputedStyle(a);
  return {Index: (window.spineKeys || []).indexOf(a), What: describe(a), Matches: ` + jsString(selector) + ` !== '' && a.matches(` + jsString(selector) + `),
    Shown: r.width > 0 && r.height > 0 && a.checkVisibility({visibilityProperty: true, opacityProperty: true}),
    InMain: !!a.closest('main'), InView: r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth,
    Ring: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0};
})()`
}

// tab presses Tab and says what has the focus then.
func (p *Tab) tab(t testing.TB, selector string) focused {
	t.Helper()
	p.Press(t, "Tab")
	var f focused
	p.evalJSON(t, focusedJS(selector), &f)
	return f
}

// TabTo presses Tab until an element matching selector has the focus (at
// most once per interactive element on the page, and a few more).
func (p *Tab) TabTo(t testing.TB, selector string) {
	t.Helper()
	n := p.interactive(t)
	for range n + 5 {
		if p.tab(t, selector).Matches {
			return
		}
	}
	t.Fatalf("%d presses of Tab never reached %s", n+5, selector)
}

// interactive lists the page's interactive elements (in window.spineKeys)
// and says how many there are.
func (p *Tab) interactive(t testing.TB) int {
	t.Helper()
	var n int
	p.evalJSON(t, `(`+interactiveJS+`).length`, &n)
	return n
}

// KeyboardCheck walks the page with the Tab key from its top, as a
// keyboard user would, on a page as it loaded (nothing focused yet). It
// lists the problems it meets: the first Tab does not reach the skip link,
// Enter on it does not move the focus to main, an element with the focus
// is not shown in the viewport or has no focus ring, or a link, button,
// form field or summary is never reached.
func (p *Tab) KeyboardCheck(t testing.TB) []string {
	t.Helper()
	p.loaded()
	n := p.interactive(t)
	p.Eval(t, `document.activeElement && document.activeElement.blur(), scrollTo(0, 0)`)
	var problems []string
	first := p.tab(t, "a.skip[href='#main']")
	if !first.Matches {
		problems = append(problems, "the first Tab reaches "+first.What+", not the skip link")
	}
	p.Press(t, "Enter")
	if got := p.Eval(t, `document.activeElement === document.querySelector('main')`); got != "true" {
		problems = append(problems, "Enter on the skip link leaves the focus on "+p.Eval(t, `(() => { `+describeJS+` return describe(document.activeElement); })()`))
	}
	reached, seen := p.walk(t, first, n)
	problems = append(problems, seen...)
	p.Eval(t, `document.activeElement && document.activeElement.blur()`) // no ring left in a screenshot
	var missed []string
	p.evalJSON(t, `window.spineKeys.filter((el, i) => !`+jsSet(reached)+`.has(i)).map(describe)`, &missed)
	for _, m := range missed {
		problems = append(problems, m+" is never reached with Tab")
	}
	return problems
}

// walk presses Tab from main to the end of the page, then round again from
// the skip link (first) through the navigation, until an element of main
// comes again. It says which of the n interactive elements it reached and
// which element it found out of sight or without a focus ring.
func (p *Tab) walk(t testing.TB, first focused, n int) (map[int]bool, []string) {
	t.Helper()
	reached, last, laps := map[int]bool{first.Index: true}, first, 0
	var problems []string
	for range 2*n + 20 {
		f := p.tab(t, "")
		if f.Index == last.Index && f.What == last.What {
			continue // a field made of parts (a date's day, month, year) keeps the focus a few presses
		}
		if f.Index == first.Index {
			laps++
		}
		if f.Index >= 0 && reached[f.Index] && (f.InMain || laps > 1) {
			break
		}
		reached[f.Index], last = true, f
		switch {
		case f.Index == -2: // the focus left the page; the next Tab comes back
		case !f.Shown || !f.InView:
			problems = append(problems, fmt.Sprintf("%s has the focus but is not to be seen (shown %t, in view %t)", f.What, f.Shown, f.InView))
		case !f.Ring:
			problems = append(problems, f.What+" has the focus and no focus ring")
		}
	}
	return reached, problems
}

// jsSet writes the indexes of set as a JavaScript Set.
func jsSet(set map[int]bool) string {
	s := "new Set(["
	for i := range set {
		s += fmt.Sprint(i) + ","
	}
	return s + "])"
}
