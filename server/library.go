package server

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/trace"
)

// DefaultMaxUploadBytes bounds one upload: 1 GiB.
const DefaultMaxUploadBytes = 1 << 30

func (s *Server) libraryRoutes() {
	s.mux.Handle("POST /v1/library/uploads", s.authed(s.upload))
	s.mux.Handle("GET /v1/library/files/{digest}", s.authed(s.getFile))
	s.mux.Handle("GET /v1/provenance/{id}", s.authed(s.provenance))
}

// UploadResponse is the answer to an upload.
type UploadResponse struct {
	ArtifactID  string `json:"artifactId"`
	Digest      string `json:"digest"`
	Size        int64  `json:"size"`
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	ProducedBy  any    `json:"producedBy"` // always null: a person uploaded it
}

// uploadParams are everything an upload request may say besides its bytes.
// There is deliberately no field for producedBy; any other parameter is
// refused rather than ignored.
type uploadParams struct {
	Name        string
	ContentType string
}

func parseUploadParams(r *http.Request) (uploadParams, error) {
	var p uploadParams
	for key, vals := range r.URL.Query() {
		if len(vals) != 1 {
			return p, fmt.Errorf("parameter %q given %d times", key, len(vals))
		}
		switch key {
		case "name":
			p.Name = vals[0]
		case "contentType":
			p.ContentType = vals[0]
		default:
			return p, fmt.Errorf("unknown parameter %q: an upload takes only name and contentType", key)
		}
	}
	p.ContentType = cmp.Or(p.ContentType, r.Header.Get("Content-Type"), "application/octet-stream")
	if err := library.CheckName(p.Name); err != nil {
		return p, err
	}
	if err := library.CheckContentType(p.ContentType); err != nil {
		return p, err
	}
	return p, nil
}

// upload streams the body into the Library, then records the upload on the
// log; the library projector turns it into an artifact owned by the caller.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	p, err := parseUploadParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	limit := cmp.Or(s.cfg.MaxUploadBytes, DefaultMaxUploadBytes)
	body := http.MaxBytesReader(w, r.Body, limit)
	f, err := s.cfg.Library.Put(r.Context(), s.cfg.Pool, body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("upload over %d bytes", limit))
		return
	}
	if err != nil {
		s.internal(w, "store upload", err)
		return
	}
	u := &library.Upload{V: 1, Type: library.UploadType, ID: library.NewUploadID(), At: time.Now().UTC(),
		Digest: f.Digest, Size: f.Size, Name: p.Name, ContentType: p.ContentType,
		Owner: owner(r)}
	if err := library.PublishUpload(r.Context(), s.cfg.JS, u); err != nil {
		s.internal(w, "record upload", err)
		return
	}
	writeJSON(w, http.StatusCreated, UploadResponse{ArtifactID: u.ID, Digest: f.Digest, Size: f.Size,
		Name: p.Name, ContentType: p.ContentType})
}

// getFile streams a file the caller may read, honouring a single Range.
func (s *Server) getFile(w http.ResponseWriter, r *http.Request) {
	f, err := s.readableFile(r, r.PathValue("digest"))
	if errors.Is(err, library.ErrNotFound) {
		notFound(w, "file")
		return
	}
	if err != nil {
		s.internal(w, "read file", err)
		return
	}
	s.sendFile(w, r, f)
}

// readableFile is the file digest names if the caller may read it
// (trace.CanRead), else library.ErrNotFound: one answer for a file that is
// missing and one that is not theirs.
func (s *Server) readableFile(r *http.Request, digest string) (library.File, error) {
	if _, err := library.ParseDigest(digest); err != nil {
		return library.File{}, library.ErrNotFound
	}
	ok, err := trace.CanRead(r.Context(), s.cfg.Pool, owner(r), digest)
	if err != nil {
		return library.File{}, err
	}
	if !ok {
		return library.File{}, library.ErrNotFound
	}
	return s.cfg.Library.Stat(r.Context(), s.cfg.Pool, digest)
}

// sendFile answers with f's bytes, or the single Range asked for.
func (s *Server) sendFile(w http.ResponseWriter, r *http.Request, f library.File) {
	off, n, partial, err := parseRange(r.Header.Get("Range"), f.Size)
	if err != nil {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", f.Size))
		writeError(w, http.StatusRequestedRangeNotSatisfiable, "bad_range", err.Error())
		return
	}
	s.serveFile(w, r, f, off, n, partial)
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, f library.File, off, n int64, partial bool) {
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Accept-Ranges", "bytes")
	h.Set("ETag", `"`+f.Digest+`"`)
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	status := http.StatusOK
	if partial {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, off+n-1, f.Size))
		status = http.StatusPartialContent
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	if err := s.cfg.Library.ReadRange(r.Context(), s.cfg.Pool, f.Digest, off, n, w); err != nil {
		// Headers are gone: cut the connection so the client sees a short body, never bad bytes.
		s.log.Error("serve file", "digest", f.Digest, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// parseRange reads one "bytes=a-b", "bytes=a-" or "bytes=-n" range. No
// header, or several ranges, means the whole file.
func parseRange(header string, size int64) (off, n int64, partial bool, err error) {
	spec, ok := strings.CutPrefix(header, "bytes=")
	if header == "" || !ok || strings.Contains(spec, ",") {
		return 0, size, false, nil
	}
	a, b, _ := strings.Cut(spec, "-")
	switch {
	case a == "":
		k, err := strconv.ParseInt(b, 10, 64)
		if err != nil || k <= 0 || size == 0 {
			return 0, 0, false, fmt.Errorf("range %q outside a file of %d bytes", header, size)
		}
		k = min(k, size)
		return size - k, k, true, nil
	default:
		start, err := strconv.ParseInt(a, 10, 64)
		if err != nil || start < 0 || start >= size {
			return 0, 0, false, fmt.Errorf("range %q outside a file of %d bytes", header, size)
		}
		end := size - 1
		if b != "" {
			if end, err = strconv.ParseInt(b, 10, 64); err != nil || end < start {
				return 0, 0, false, fmt.Errorf("bad range %q", header)
			}
			end = min(end, size-1)
		}
		return start, end - start + 1, true, nil
	}
}

// provenance traces a digest, an artifact id, a session id, or else a plan
// run or plan id (traceID).
func (s *Server) provenance(w http.ResponseWriter, r *http.Request) {
	t, err := s.traceID(r, r.PathValue("id"))
	if errors.Is(err, trace.ErrNotFound) {
		notFound(w, "artifact, file, session or plan")
		return
	}
	if err != nil {
		s.internal(w, "trace", err)
		return
	}
	writeJSON(w, http.StatusOK, t.value())
}

// traced is what an id traces to: exactly one of a file (a digest or an
// artifact id), a session and a plan.
type traced struct {
	File    *trace.File
	Session *trace.Session
	Plan    *trace.Plan
}

func (t traced) value() any {
	switch {
	case t.File != nil:
		return t.File
	case t.Session != nil:
		return t.Session
	}
	return t.Plan
}

// traceID traces id for GET /v1/provenance/{id} and its page: as a digest
// or artifact id, else a session id, else a plan run or plan id. An
// admin's plan trace has the plan's whole spend and budget, as GET
// /v1/plans/{id}/spend answers them; its sessions are the caller's, as
// every trace's are.
func (s *Server) traceID(r *http.Request, id string) (traced, error) {
	var t traced
	var err error
	t.File, err = trace.OfID(r.Context(), s.cfg.Pool, owner(r), id)
	if !errors.Is(err, trace.ErrNotFound) || !streams.ValidID(id) {
		return t, err
	}
	t.Session, err = trace.OfSession(r.Context(), s.cfg.Pool, owner(r), id)
	if !errors.Is(err, trace.ErrNotFound) {
		return t, err
	}
	t.Plan, err = s.planTrace(r, id)
	return t, err
}

// planTrace traces a plan run or plan id as the caller may see it.
func (s *Server) planTrace(r *http.Request, id string) (*trace.Plan, error) {
	return trace.OfPlan(r.Context(), s.cfg.Pool, owner(r), id, &trace.PlanOpts{OrgSpend: caller(r).IsAdmin()})
}
