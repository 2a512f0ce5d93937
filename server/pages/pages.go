package pages

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io"
	"io/fs"
	"strings"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/desktop"
)

//go:embed *.html
var files embed.FS

//go:embed assets
var assets embed.FS

// Assets are the files every page links: one stylesheet and one script,
// served under /ui/assets/.
func Assets() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}

// AssetVersion changes whenever an asset does: pages link the assets with
// it (?v=), so a browser may keep them as long as it likes.
var AssetVersion = func() string {
	h := sha256.New()
	_ = fs.WalkDir(Assets(), ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(Assets(), path)
			h.Write([]byte(path))
			h.Write(b)
		}
		return err
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

// NavItem is one section of the navigation every page shows.
type NavItem struct{ Section, Label, Href string }

// Nav lists the sections, in the order the navigation shows them.
var Nav = []NavItem{
	{"sessions", "Sessions", "/ui/sessions"},
	{"remote", "Remote sessions", "/ui/remote"},
	{"cost", "Cost", "/ui/cost"},
	{"provenance", "Provenance", "/ui/provenance"},
	{"deadletters", "Dead letters", "/ui/deadletters"},
}

var tmpl = template.Must(template.New("pages").Funcs(template.FuncMap{
	"int":          accounting.FormatInt,
	"dollars":      accounting.FormatDollars,
	"when":         when,
	"assetVersion": func() string { return AssetVersion },
	"navItems":     func() []NavItem { return Nav },
	"producer":     producer,
	"cost":         reportedCost,
	"duration":     Duration,
	"status":       Status,
}).ParseFS(files, "*.html"))

// Viewer is who a page is for: the verified caller, and whether they are
// the org's admin (whose pages show the whole org).
type Viewer struct {
	Org, Member string
	Admin       bool
}

// View is what every page is rendered from: the frame's parts and the
// page's own data.
type View struct {
	Title   string // the page's title, before " · spine"
	Section string // the navigation item the page belongs to (Nav's Section)
	Viewer  Viewer
	// Events is the URL of the page's server-sent events ("" = none): the
	// script follows it and refreshes the page's live parts (spine.js).
	Events string
	// Refresh, in seconds, reloads the page without script (0 = never):
	// what a live page does for a browser that runs none.
	Refresh int
	Data    any
}

// Render writes the page or fragment called name (a template defined in
// one of this package's .html files).
func Render(w io.Writer, name string, v View) error { return tmpl.ExecuteTemplate(w, name, v) }

// RemoteView is what a remote session's page shows: the session and its
// transcript as desktop reads them.
type RemoteView struct {
	*desktop.ReadResult
	Path string // the page's own path, which its live part is fetched from
}

// Error writes a page that says msg and nothing else.
func Error(w io.Writer, msg string) error { return tmpl.ExecuteTemplate(w, "error", msg) }

// Card writes one remote session's MCP Apps card: title, state, machine,
// last activity and a link to its page.
func Card(w io.Writer, s *desktop.Session) error { return tmpl.ExecuteTemplate(w, "card", s) }

// GenericCard is the card that renders whatever session the host hands it
// over the MCP Apps bridge (ui/notifications/tool-result); it takes no data.
func GenericCard() string { return genericCard }

var genericCard = func() string {
	var b strings.Builder
	if err := tmpl.ExecuteTemplate(&b, "card-generic", nil); err != nil {
		panic(err)
	}
	return b.String()
}()
