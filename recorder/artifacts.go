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
		art := &artifact{id: fmt.Sprintf("art-%s-end-%d", s.ID, i+1), kind: "pushed", name: Redact(a.Name),
			sessionID: s.ID, org: s.Org, member: s.Member, at: e.At}
		switch {
		case a.ContentDigest != "":
			if _, err := library.ParseDigest(a.ContentDigest); err != nil || a.Size == nil {
				continue
			}
			art.digest, art.size, art.byReference = a.ContentDigest, *a.Size, true
		default:
			data := []byte(Redact(a.Content))
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

// copyArtifacts writes the batch's artifacts.
func (b *batch) copyArtifacts(ctx context.Context, missing map[string]bool) error {
	if len(b.arts) == 0 {
		return nil
	}
	_, err := b.tx.CopyFrom(ctx, pgx.Identifier{"artifacts"}, []string{"id", "kind", "name", "digest", "size",
		"content_missing", "content_omitted", "by_reference", "org", "member", "session_id", "step_id", "created_at"},
		pgx.CopyFromSlice(len(b.arts), func(i int) ([]any, error) {
			a := b.arts[i]
			return []any{a.id, a.kind, a.name, a.digest, a.size, a.missing || missing[a.digest], a.omitted,
				a.byReference, a.org, a.member, a.sessionID, a.stepID, a.at}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy %d artifacts: %w", len(b.arts), err)
	}
	return nil
}

// stamp writes producedBy on every artifact an ended session pushed. Only
// the recorder calls it, from the session's end record; no HTTP route can
// reach it, and uploads never pass through it.
func (b *batch) stamp(ctx context.Context, ended []*Session) error {
	if len(ended) == 0 {
		return nil
	}
	q := &pgx.Batch{}
	for _, s := range ended {
		by, _ := json.Marshal(ProducedBy{App: s.App, Model: s.Model, Effort: s.Effort, SessionID: s.ID})
		// session_id <> '' lets a generic plan use the partial index
		// artifacts_session; without it a prepared statement's generic
		// plan scans every artifact once per ended session.
		q.Queue(`UPDATE artifacts SET produced_by = $2 WHERE session_id = $1 AND session_id <> '' AND kind <> 'upload'`,
			s.ID, string(by))
	}
	if err := b.tx.SendBatch(ctx, q).Close(); err != nil {
		return fmt.Errorf("stamp producedBy on %d sessions: %w", len(ended), err)
	}
	return nil
}
