package chromium

import "testing"

// A phone's screen in CSS pixels (an iPhone 14's), at twice the density.
const (
	PhoneWidth  = 390
	PhoneHeight = 844
	phoneScale  = 2
)

// Viewport makes the tab's screen w×h CSS pixels. mobile lays the page out
// as a phone's browser does: by its <meta name="viewport">, at twice the
// pixel density; else as a laptop's window at one pixel per CSS pixel.
func (p *Tab) Viewport(t testing.TB, w, h int, mobile bool) {
	t.Helper()
	scale := 1
	if mobile {
		scale = phoneScale
	}
	err := p.b.call(p.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": w, "height": h, "deviceScaleFactor": scale, "mobile": mobile,
		"screenWidth": w, "screenHeight": h}, nil)
	if err != nil {
		t.Fatal(err)
	}
}

// Phone makes the tab a phone's screen (PhoneWidth×PhoneHeight, mobile).
func (p *Tab) Phone(t testing.TB) { p.Viewport(t, PhoneWidth, PhoneHeight, true) }

// overflowJS lists what sticks out of the layout viewport to the right:
// the page as a whole, its main landmark, and the outermost elements past
// the edge, skipping what is inside an element that scrolls sideways on
// purpose (.table, a pre with overflow: auto). Something off to the left
// (the skip link, a visually hidden label) widens nothing.
const overflowJS = `(() => {
  const out = [], doc = document.documentElement, width = doc.clientWidth;
  if (innerWidth > screen.width) out.push('the page is laid out ' + innerWidth + 'px wide on a ' + screen.width + 'px screen (content too wide, or no viewport meta)');
  if (doc.scrollWidth > width) out.push('the page scrolls sideways: ' + doc.scrollWidth + 'px wide in a ' + width + 'px viewport');
  const main = document.querySelector('main');
  if (main && (main.getBoundingClientRect().right > width + 0.5 || main.scrollWidth > main.clientWidth))
    out.push('main is ' + main.scrollWidth + 'px wide in a ' + width + 'px viewport');
  const scrolls = el => ['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(el).overflowX);
  const walk = el => {
    let found = false;
    for (const c of el.children) {
      const r = c.getBoundingClientRect();
      if (r.right > width + 0.5) { out.push(describe(c) + ' reaches ' + Math.round(r.right) + 'px'); found = true; continue; }
      if (scrolls(c)) continue;
      if (walk(c)) { found = true; continue; }
      if (c.clientWidth > 0 && r.left + c.scrollWidth > width + 0.5) {
        out.push('the text of ' + describe(c) + ' reaches ' + Math.round(r.left + c.scrollWidth) + 'px'); found = true; }
    }
    return found;
  };
  walk(document.body);
  return out;
})()`

// Overflow lists what overflows the viewport sideways (at its current
// size: call Phone first for a phone's), so nothing but a table or a
// preformatted block needs a sideways scroll. None is no problem.
func (p *Tab) Overflow(t testing.TB) []string {
	t.Helper()
	var out []string
	p.evalJSON(t, overflowJS, &out)
	return out
}
