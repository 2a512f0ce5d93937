package chromium

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// axNode is one node of Chromium's accessibility tree: what a screen
// reader is given.
type axNode struct {
	NodeID     string `json:"nodeId"`
	Ignored    bool
	Role, Name struct{ Value any }
	Properties []struct {
		Name  string
		Value struct{ Value any }
	}
	ChildIDs         []string `json:"childIds"`
	BackendDOMNodeID int      `json:"backendDOMNodeId"`
}

func (n *axNode) role() string { return fmt.Sprint(n.Role.Value) }
func (n *axNode) name() string {
	if n.Name.Value == nil {
		return ""
	}
	return strings.TrimSpace(fmt.Sprint(n.Name.Value))
}

func (n *axNode) property(name string) any {
	for _, p := range n.Properties {
		if p.Name == name {
			return p.Value.Value
		}
	}
	return nil
}

// Roles that are something to operate (a control) or to see (an image):
// each needs a name to be told apart by ear.
var (
	controlRoles = []string{"button", "checkbox", "ColorWell", "combobox", "Date", "DateTime", "DisclosureTriangle",
		"InputTime", "link", "listbox", "radio", "searchbox", "slider", "spinbutton", "switch", "textbox"}
	imageRoles = []string{"image", "img", "graphics-document", "graphics-symbol"}
)

// axTree is the page's accessibility tree with the DOM beside it, to find
// what a screen reader is given for an element.
type axTree struct {
	nodes     []*axNode
	byID      map[string]*axNode
	byBackend map[int]*axNode
	dom       *domNode
	backendOf map[int]int      // DOM nodeId → backendNodeId
	element   map[int]*domNode // backendNodeId → DOM node
}

// domNode is a node of DOM.getDocument's tree.
type domNode struct {
	NodeID        int `json:"nodeId"`
	BackendNodeID int `json:"backendNodeId"`
	NodeType      int
	LocalName     string
	Attributes    []string
	Children      []*domNode
}

func (d *domNode) attr(name string) string {
	for i := 0; i+1 < len(d.Attributes); i += 2 {
		if d.Attributes[i] == name {
			return d.Attributes[i+1]
		}
	}
	return ""
}

func (d *domNode) hasClass(c string) bool { return slices.Contains(strings.Fields(d.attr("class")), c) }

// String names the element in a problem: its tag and its id, name or
// classes.
func (d *domNode) String() string {
	if d == nil {
		return "an element"
	}
	s := d.LocalName
	for _, a := range []string{"id", "name", "class"} {
		if v := d.attr(a); v != "" {
			s += fmt.Sprintf("[%s=%q]", a, v)
		}
	}
	return s
}

func (p *Tab) axTree(t testing.TB) *axTree {
	t.Helper()
	var tree struct{ Nodes []*axNode }
	if err := p.b.call(p.session, "Accessibility.getFullAXTree", map[string]any{}, &tree); err != nil {
		t.Fatal(err)
	}
	var doc struct{ Root *domNode }
	if err := p.b.call(p.session, "DOM.getDocument", map[string]any{"depth": -1}, &doc); err != nil {
		t.Fatal(err)
	}
	a := &axTree{nodes: tree.Nodes, byID: map[string]*axNode{}, byBackend: map[int]*axNode{}, dom: doc.Root, backendOf: map[int]int{}, element: map[int]*domNode{}}
	for _, n := range tree.Nodes {
		a.byID[n.NodeID] = n
		if n.BackendDOMNodeID != 0 {
			a.byBackend[n.BackendDOMNodeID] = n
		}
	}
	walkDOM(doc.Root, func(d *domNode) { a.backendOf[d.NodeID], a.element[d.BackendNodeID] = d.BackendNodeID, d })
	return a
}

func walkDOM(d *domNode, f func(*domNode)) {
	f(d)
	for _, c := range d.Children {
		walkDOM(c, f)
	}
}

// shown lists the nodes a screen reader is given (not ignored) with role.
func (a *axTree) shown(roles ...string) []*axNode {
	var out []*axNode
	for _, n := range a.nodes {
		if !n.Ignored && slices.Contains(roles, n.role()) {
			out = append(out, n)
		}
	}
	return out
}

// has says whether a node under n (not n) is one of roles.
func (a *axTree) has(n *axNode, roles ...string) bool {
	for _, id := range n.ChildIDs {
		c := a.byID[id]
		if c != nil && (!c.Ignored && slices.Contains(roles, c.role()) || a.has(c, roles...)) {
			return true
		}
	}
	return false
}

// text is what a screen reader reads of a DOM element: the text of its
// text nodes that the accessibility tree holds.
func (a *axTree) text(d *domNode) string {
	var words []string
	walkDOM(d, func(c *domNode) {
		if n := a.byBackend[c.BackendNodeID]; c.NodeType == 3 && n != nil && !n.Ignored {
			words = append(words, n.name())
		}
	})
	return strings.TrimSpace(strings.Join(words, " "))
}

// AXCheck reads the page's accessibility tree, what a screen reader
// follows, and lists its problems: not one main landmark; no navigation
// landmark, or one without a name of its own or without a link; not one
// h1; no title; a link, button or form field without a name; an image (an
// svg: a chart) without one; a table without header cells; a state (class
// "state": done, running…) that is colour alone, with no words read out;
// and, for each of live (CSS selectors of what the page's docs say updates
// by itself), no element, or one that is not an aria-live region.
func (p *Tab) AXCheck(t testing.TB, live ...string) []string {
	t.Helper()
	p.loaded()
	a := p.axTree(t)
	problems := a.landmarks()
	problems = append(problems, a.names()...)
	problems = append(problems, a.states()...)
	for _, sel := range live {
		problems = append(problems, p.liveRegion(t, a, sel)...)
	}
	return problems
}

func (a *axTree) landmarks() []string {
	var problems []string
	if n := len(a.shown("main")); n != 1 {
		problems = append(problems, fmt.Sprintf("%d main landmarks, not one", n))
	}
	navs, names := a.shown("navigation"), map[string]bool{}
	if len(navs) == 0 {
		problems = append(problems, "no navigation landmark")
	}
	for _, n := range navs {
		switch {
		case n.name() == "":
			problems = append(problems, "a navigation landmark has no name")
		case names[n.name()]:
			problems = append(problems, fmt.Sprintf("two navigation landmarks are named %q", n.name()))
		case !a.has(n, "link"):
			problems = append(problems, fmt.Sprintf("the navigation landmark %q has no link", n.name()))
		}
		names[n.name()] = true
	}
	h1 := 0
	for _, h := range a.shown("heading") {
		if fmt.Sprint(h.property("level")) == "1" {
			h1++
		}
	}
	if h1 != 1 {
		problems = append(problems, fmt.Sprintf("%d h1 headings, not one", h1))
	}
	return problems
}

func (a *axTree) names() []string {
	var problems []string
	if root := a.shown("RootWebArea"); len(root) != 1 || root[0].name() == "" {
		problems = append(problems, "the page has no title")
	}
	for _, n := range a.shown(controlRoles...) {
		if n.name() == "" {
			problems = append(problems, fmt.Sprintf("a %s (%s) has no accessible name", n.role(), a.element[n.BackendDOMNodeID]))
		}
	}
	for _, n := range a.shown(imageRoles...) {
		if n.name() == "" {
			problems = append(problems, fmt.Sprintf("an image (%s) has no accessible name", a.element[n.BackendDOMNodeID]))
		}
	}
	for _, n := range a.shown("table") {
		if !a.has(n, "columnheader", "rowheader") {
			problems = append(problems, fmt.Sprintf("the table %q has no header cells", n.name()))
		}
	}
	return problems
}

func (a *axTree) states() []string {
	var problems []string
	walkDOM(a.dom, func(d *domNode) {
		if d.NodeType == 1 && d.hasClass("state") && a.text(d) == "" {
			problems = append(problems, fmt.Sprintf("a state (%s) is colour alone: no words are read out", d))
		}
	})
	return problems
}

// liveRegion checks that what sel selects is in the tree as a live region.
func (p *Tab) liveRegion(t testing.TB, a *axTree, sel string) []string {
	t.Helper()
	var found struct {
		NodeIDs []int `json:"nodeIds"`
	}
	err := p.b.call(p.session, "DOM.querySelectorAll", map[string]any{"nodeId": a.dom.NodeID, "selector": sel}, &found)
	if err != nil {
		t.Fatal(err)
	}
	if len(found.NodeIDs) == 0 {
		return []string{sel + " is not on the page"}
	}
	var problems []string
	for _, id := range found.NodeIDs {
		n := a.byBackend[a.backendOf[id]]
		if n == nil || n.Ignored {
			problems = append(problems, sel+" is not in the accessibility tree")
		} else if live := n.property("live"); live != "polite" && live != "assertive" {
			problems = append(problems, sel+" is not a live region (no aria-live)")
		}
	}
	return problems
}
