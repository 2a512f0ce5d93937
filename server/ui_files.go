package server

import (
	"errors"
	"mime"
	"net/http"
	"path"

	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/trace"
)

// fileCSP keeps a file's bytes inert even if a browser were to render
// them in spine's origin: no script, no plugin, no same-origin access.
const fileCSP = "sandbox; default-src 'none'"

// pageFile is GET /v1/library/files/{digest} for the pages' sign-in: the
// same rule (trace.CanRead), the bytes always a download with the name
// the caller's artifact gives them (else the digest), never sniffed or
// rendered as a page of spine's; a file the caller may not read, or a
// missing one, is the pages' 404.
func (s *Server) pageFile(w http.ResponseWriter, r *http.Request) {
	digest := r.PathValue("digest")
	f, err := s.readableFile(r, digest)
	if errors.Is(err, library.ErrNotFound) {
		s.pageMessage(w, r, http.StatusNotFound, "sessions", "Not found", "file not found")
		return
	}
	if err != nil {
		s.pageFailed(w, "file", err)
		return
	}
	name, err := trace.FileName(r.Context(), s.cfg.Pool, owner(r), f.Digest)
	if err != nil {
		s.pageFailed(w, "file", err)
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", fileCSP)
	h.Set("Content-Disposition", attachment(name, f.Digest))
	s.sendFile(w, r, f)
}

// attachment is a Content-Disposition that downloads the file as the last
// element of name, or as digest when it has none or one no header holds.
func attachment(name, digest string) string {
	if base := path.Base(name); name != "" && base != "." && base != "/" {
		if v := mime.FormatMediaType("attachment", map[string]string{"filename": base}); v != "" {
			return v
		}
	}
	return mime.FormatMediaType("attachment", map[string]string{"filename": digest})
}
