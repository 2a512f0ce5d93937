package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/streams"
)

// artifact is a named reference to a Library file that a session pushed:
// a file it wrote, an artifact on its end record, or its transcript.
type artifact struct {
	id, kind, name, digest, sessionID, stepID string
	size                                      int64
	omitted, missing, byReference             bool
	org, member                               string
	at                                        time.Time
}

// ProducedBy is the provenance stamp on everything a session pushed: the
// app and what it reported about itself. Empty model or effort means the
// app did not say.
type ProducedBy struct {
	App       string `json:"app"`
	Model     string `json:"model"`
	Effort    string `json:"effort"`
	SessionID string `json:"sessionId"`
}

// pushed records the file a file_write step wrote as an artifact.
func (b *batch) pushed(s *Session, stepID string, detail map[string]any, at time.Time) {
	digest, _ := detail["contentDigest"].(string)
	if digest == "" {
		return // a malformed pushed digest: nothing to reference
	}
	path, _ := detail["path"].(string)
	b.arts = append(b.arts, &artifact{id: "art-" + stepID, kind: "pushed", name: path, digest: digest,
		sessionID: s.ID, stepID: stepID, size: sizeOf(detail["size"]), omitted: detail["contentOmitted"] == true,
		byReference: detail["contentPushed"] == true, org: s.Org, member: s.Member, at: at})
}

func sizeOf(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	}
	return 0
}

// endArtifacts records the artifacts a session.end names.
func (b *batch) endArtifacts(s *Session, e *streams.Envelope) {
	for i, a := range e.Artifacts {
		art := &artifact{id: fmt.Sprintf("art-%s-end-%d", s.ID, i+1), kind: "pushed", name: a.Name,
			sessionID: s.ID, org: s.Org, member: s.Member, at: e.At}
		switch {
		case a.ContentDigest != "":
			if _, err := library.ParseDigest(a.ContentDigest); err != nil || a.Size == nil {
				continue
			}
			art.digest, art.size, art.byReference = a.ContentDigest, *a.Size, true
		default:
			data := []byte(a.Content)
			art.size = int64(len(data))
			if len(data) > b.r.fileCap {
				art.digest, art.omitted = library.Digest(data), true
			} else {
				art.digest = b.putBlob(data)
			}
		}
		b.arts = append(b.arts, art)
	}
}

// transcriptArtifact records a session's transcript file as an artifact.
func (b *batch) transcriptArtifact(s *Session, size int64, missing bool) {
	b.arts = append(b.arts, &artifact{id: "art-" + s.ID + "-transcript", kind: "transcript",
		name: "transcript.jsonl", digest: s.TranscriptFileID, sessionID: s.ID, size: size, missing: missing,
		org: s.Org, member: s.Member, at: *s.EndedAt})
}

// copyArtifacts writes the batch's artifacts. Those of a session that
// ended in this batch carry its producedBy stamp as they are written.
func (b *batch) copyArtifacts(ctx context.Context, missing map[string]bool) error {
	if len(b.arts) == 0 {
		return nil
	}
	_, err := b.tx.CopyFrom(ctx, pgx.Identifier{"artifacts"}, []string{"id", "kind", "name", "digest", "size",
		"content_missing", "content_omitted", "by_reference", "org", "member", "session_id", "step_id", "created_at",
		"produced_by"},
		pgx.CopyFromSlice(len(b.arts), func(i int) ([]any, error) {
			a := b.arts[i]
			var by any
			if s := b.sessions[a.sessionID]; s != nil && s.Ended() {
				by = producedBy(s)
			}
			return []any{a.id, a.kind, a.name, a.digest, a.size, a.missing || missing[a.digest], a.omitted,
				a.byReference, a.org, a.member, a.sessionID, a.stepID, a.at, by}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy %d artifacts: %w", len(b.arts), err)
	}
	return nil
}

func producedBy(s *Session) string {
	by, _ := json.Marshal(ProducedBy{App: s.App, Model: s.Model, Effort: s.Effort, SessionID: s.ID})
	return string(by)
}

// stamp writes producedBy on every artifact an ended session pushed in
// earlier batches (copyArtifacts stamped this batch's), in one statement.
// Only the recorder calls it, from the session's end record; no HTTP route
// can reach it, and uploads never pass through it.
func (b *batch) stamp(ctx context.Context, ended []*Session) error {
	var ids, bys []string
	for _, s := range ended {
		if !s.isNew { // a session started in this batch has no earlier artifacts
			ids, bys = append(ids, s.ID), append(bys, producedBy(s))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	// Unprepared, so it is planned with the batch's ids and probes the
	// partial index artifacts_session (session_id <> '' lets it qualify).
	_, err := b.tx.Exec(ctx, `UPDATE artifacts a SET produced_by = u.by::jsonb
		FROM unnest($1::text[], $2::text[]) AS u(session_id, by)
		WHERE a.session_id = u.session_id AND a.session_id <> '' AND a.kind <> 'upload' AND a.produced_by IS NULL`,
		pgx.QueryExecModeExec, ids, bys)
	if err != nil {
		return fmt.Errorf("stamp producedBy on %d sessions: %w", len(ids), err)
	}
	return nil
}
