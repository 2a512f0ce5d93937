package pages

import (
	"embed"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/desktop"
)

//go:embed *.html
var files embed.FS

var tmpl = template.Must(template.New("pages").Funcs(template.FuncMap{
	"int":     accounting.FormatInt,
	"dollars": accounting.FormatDollars,
	"when":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).ParseFS(files, "*.html"))

// Cost writes the cost page (/ui/cost) of a laid-out summary.
func Cost(w io.Writer, d accounting.PageData) error { return tmpl.ExecuteTemplate(w, "cost", d) }

// SessionView is what a remote session's page shows: the session and its
// transcript as desktop reads them, and the nonce of the page's one script
// (the page's Content-Security-Policy allows only it).
type SessionView struct {
	*desktop.ReadResult
	Nonce string
}

// Session writes a remote session's page (/ui/sessions/{id}).
func Session(w io.Writer, v SessionView) error { return tmpl.ExecuteTemplate(w, "session", v) }

// SessionLive writes the live part of a session's page alone: what the
// page's script fetches (?fragment=1) when the session changes.
func SessionLive(w io.Writer, v SessionView) error { return tmpl.ExecuteTemplate(w, "session-live", v) }

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
