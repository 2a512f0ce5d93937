package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/streams"
)

// File is the auditor's answer for a file: every artifact of the caller's
// that references it, each with its producer or the person who uploaded it.
type File struct {
	Digest    string     `json:"digest"`
	Size      int64      `json:"size"`
	Stored    bool       `json:"stored"` // false when the bytes were omitted or could not be stored
	Artifacts []Artifact `json:"artifacts"`
}

// Artifact is one artifact with where it came from.
type Artifact struct {
	ID             string           `json:"id"`
	Kind           string           `json:"kind"`
	Name           string           `json:"name"`
	Size           int64            `json:"size"`
	ContentType    string           `json:"contentType,omitempty"`
	ContentMissing bool             `json:"contentMissing"`
	ContentOmitted bool             `json:"contentOmitted"`
	CreatedAt      time.Time        `json:"createdAt"`
	Org            string           `json:"org"`
	Member         string           `json:"member"`
	ProducedBy     json.RawMessage  `json:"producedBy"`           // null: uploaded by a person, or the session has not ended
	UploadedBy     string           `json:"uploadedBy,omitempty"` // the member, for uploads
	Session        *SessionRow      `json:"session,omitempty"`
	Step           *Step            `json:"step,omitempty"`
	RouterCall     *accounting.Call `json:"routerCall"` // the session's accounting row; null until recorded
}

// SessionRow is the producing session as the recorder holds it.
type SessionRow struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	App    string `json:"app"`
	Model  string `json:"model"`
	Effort string `json:"effort"`
	// Billing is the router-call row's class (metered, subscription,
	// unknown) once accounting has recorded it, else empty; BillingSignal is
	// what the machine said at the end ("" = silent).
	Billing       string  `json:"billing"`
	BillingSignal string  `json:"billingSignal"`
	RunID         string  `json:"runId"`
	ParentRunID   string  `json:"parentRunId,omitempty"`
	ParentStepID  string  `json:"parentStepId,omitempty"`
	TotalCost     *string `json:"totalCost"`
}

// Step is the step that wrote the file.
type Step struct {
	ID     string    `json:"id"`
	Idx    int       `json:"idx"`
	Action string    `json:"action"`
	At     time.Time `json:"at"`
}

// OfID traces a digest ("blake3:…") or an artifact id.
func OfID(ctx context.Context, q streams.Querier, owner streams.Owner, id string) (*File, error) {
	digest := id
	if !strings.HasPrefix(id, library.DigestPrefix) {
		err := q.QueryRow(ctx, `SELECT digest FROM artifacts WHERE id = $1 AND org = $2 AND member = $3`,
			id, owner.Org, owner.Member).Scan(&digest)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("trace %s: %w", id, err)
		}
	} else if _, err := library.ParseDigest(id); err != nil {
		return nil, ErrNotFound
	}
	return OfDigest(ctx, q, owner, digest)
}

// OfDigest lists the caller's artifacts that reference digest.
func OfDigest(ctx context.Context, q streams.Querier, owner streams.Owner, digest string) (*File, error) {
	arts, err := tracedArtifacts(ctx, q, owner, `a.digest = $1 AND a.org = $2 AND a.member = $3 ORDER BY a.created_at, a.id`,
		digest, owner.Org, owner.Member)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", digest, err)
	}
	if len(arts) == 0 {
		return nil, ErrNotFound
	}
	t := &File{Digest: digest, Size: arts[0].Size, Artifacts: arts}
	err = q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM library_files WHERE digest = $1)`, digest).Scan(&t.Stored)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", digest, err)
	}
	return t, nil
}

// tracedArtifacts reads artifacts with their session, run and step, and
// each session's router-call row; where is the rest of the statement.
func tracedArtifacts(ctx context.Context, q streams.Querier, owner streams.Owner, where string, args ...any) ([]Artifact, error) {
	rows, err := q.Query(ctx, `SELECT a.id, a.kind, a.name, a.size, a.content_type, a.content_missing,
			a.content_omitted, a.created_at, a.org, a.member, a.produced_by,
			s.id, s.status, s.app, s.model, s.effort, s.billing, s.session_run_id, r.parent_run_id, r.parent_step_id,
			s.total_cost::text, st.id, st.idx, st.action, st.at
		FROM artifacts a
		LEFT JOIN sessions s ON s.id = a.session_id AND a.session_id <> ''
		LEFT JOIN runs r ON r.id = s.session_run_id
		LEFT JOIN steps st ON st.id = a.step_id AND a.step_id <> ''
		WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	arts, err := pgx.CollectRows(rows, scanTraced)
	if err != nil {
		return nil, err
	}
	return arts, attachRouterCalls(ctx, q, owner, arts)
}

func scanTraced(r pgx.CollectableRow) (Artifact, error) {
	var a Artifact
	var sid, status, app, model, effort, billing, runID, parentRun, parentStep, stepID, action *string
	var cost *string
	var idx *int
	var at *time.Time
	err := r.Scan(&a.ID, &a.Kind, &a.Name, &a.Size, &a.ContentType, &a.ContentMissing, &a.ContentOmitted,
		&a.CreatedAt, &a.Org, &a.Member, &a.ProducedBy, &sid, &status, &app, &model, &effort, &billing, &runID,
		&parentRun, &parentStep, &cost, &stepID, &idx, &action, &at)
	if err != nil {
		return a, err
	}
	if len(a.ProducedBy) == 0 {
		a.ProducedBy = json.RawMessage("null")
	}
	if a.Kind == "upload" {
		a.UploadedBy = a.Member
	}
	if sid != nil {
		a.Session = &SessionRow{ID: *sid, Status: *status, App: *app, Model: *model, Effort: *effort,
			BillingSignal: *billing, RunID: *runID, ParentRunID: deref(parentRun), ParentStepID: deref(parentStep), TotalCost: cost}
	}
	if stepID != nil {
		a.Step = &Step{ID: *stepID, Idx: *idx, Action: *action, At: *at}
	}
	return a, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// attachRouterCalls gives each artifact its session's router-call row,
// reading them in one statement. Every artifact is the owner's (each read
// here is scoped so), and so is its session.
func attachRouterCalls(ctx context.Context, q streams.Querier, owner streams.Owner, arts []Artifact) error {
	var ids []string
	for _, a := range arts {
		if a.Session != nil {
			ids = append(ids, a.Session.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	calls, err := accounting.CallsOf(ctx, q, owner, ids)
	if err != nil {
		return err
	}
	for i := range arts {
		if s := arts[i].Session; s != nil && calls[s.ID] != nil {
			arts[i].RouterCall, s.Billing = calls[s.ID], calls[s.ID].Billing
		}
	}
	return nil
}
