package fakemodel

import "net/http"

// responses serves POST /v1/responses (OpenAI's Responses API, streamed as
// server-sent events). Owned by the Codex rig; not written yet.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "fakemodel: responses not implemented yet", http.StatusNotImplemented)
}
