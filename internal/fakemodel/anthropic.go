package fakemodel

import "net/http"

// messages serves POST /v1/messages (Anthropic's Messages API, streamed as
// server-sent events). Owned by the Claude Code rig; not written yet.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "fakemodel: messages not implemented yet", http.StatusNotImplemented)
}
