package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/spine"
	"github.com/spinehq/spine/streams"
)

// errDuplicate marks a message dropped silently: a chunk that repeats the
// last one recorded, or a sweeper's end that no longer holds. Not an error,
// not a dead letter (nobody is owed an answer), not counted on the row.
var errDuplicate = errors.New("duplicate")

// protocolTools are the session's protocol with the MCP node, never its work.
var protocolTools = []string{"submit", "next_task"}

// batch is the recorder's state for one projector batch: the sessions it
// touches and the rows it will write, flushed once at the end.
type batch struct {
	r        *Recorder
	tx       *pipeTx // its writes pipelined (pipeline.go)
	sessions map[string]*Session
	before   map[string]int64 // each session's last seq as preload read it
	chunks   []batchChunk
	blobs    map[string]library.Blob
	work     spine.Batch
	steps    []*pendingStep           // written at flush, once the Library has answered
	arts     []*artifact              // artifacts created in this batch
	calls    map[string]string        // runID+"\x00"+callID -> step id: this batch's, and the table's it names
	claims   map[string]streams.Owner // who holds the ids of starts and telemetry with no row yet
	ledger   ledger                   // telemetry requests (ledger.go)
	reopened []string                 // ended telemetry sessions a start reopened (merge.go)
	// superseded are the sessions whose telemetry steps a start superseded
	// (merge_steps.go); supersedable the calls keys of telemetry steps a
	// start would supersede, this batch's and those preloadCalls read.
	superseded   []*Session
	supersedable map[string]bool
}

// batchChunk is a chunk of the batch's, with its session's id; its time is
// as the table keeps it (tableTime).
type batchChunk struct {
	sessionID string
	Chunk
}

// pendingStep is a step and its result observation whose details may still
// learn that their content could not be stored.
type pendingStep struct {
	step           spine.Step
	obs            spine.Observation
	detail, result map[string]any
}

func newBatch(r *Recorder, tx pgx.Tx) *batch {
	return &batch{r: r, tx: &pipeTx{Tx: tx}, sessions: map[string]*Session{}, before: map[string]int64{}, blobs: map[string]library.Blob{},
		calls: map[string]string{}, supersedable: map[string]bool{}, ledger: ledger{seen: map[string]bool{}, sum: map[string]bool{}}}
}

// preload reads every session the batch names in one query.
func (b *batch) preload(ctx context.Context, envs []*streams.Envelope) error {
	ids := streams.SessionIDs(envs)
	if len(ids) == 0 {
		return nil
	}
	found, err := loadSessions(ctx, b.tx, ids)
	if err != nil {
		return err
	}
	for _, s := range found {
		b.sessions[s.ID], b.before[s.ID] = s, s.LastSeq
	}
	if b.claims, err = heldBy(ctx, b.tx, b.unrecordedClaims(envs)); err != nil {
		return err
	}
	return b.preloadCalls(ctx, envs)
}

// unrecordedClaims lists the session ids the batch claims (its starts and
// telemetry) that have no row.
func (b *batch) unrecordedClaims(envs []*streams.Envelope) []string {
	var ids []string
	for _, e := range envs {
		if e != nil && (e.Type == streams.TypeSessionStart || e.Type == streams.TypeSessionTelemetry) &&
			b.sessions[e.SessionID] == nil {
			ids = append(ids, e.SessionID)
		}
	}
	return ids
}

// apply applies one envelope. The first result is the envelope's outcome
// (nil, errDuplicate or a *streams.Rejection); the second a database failure.
func (b *batch) apply(ctx context.Context, m streams.Message, e *streams.Envelope) (error, error) {
	switch e.Type {
	case streams.TypeSessionStart:
		return b.start(m, e), nil
	case streams.TypeSessionChunk:
		return b.chunk(ctx, m, e)
	case streams.TypeSessionControl:
		return b.control(m, e), nil
	case streams.TypeSessionEnd:
		return b.end(m, e), nil
	case streams.TypeSessionUsage:
		return b.usage(m, e), nil
	case streams.TypeMCPCall:
		return b.mcpCall(m, e), nil
	case streams.TypeWorkerDisconnect:
		return nil, b.disconnect(ctx, m, e)
	case streams.TypeSessionTelemetry:
		return b.telemetry(m, e), nil
	}
	return streams.Reject(streams.ReasonUnknownType, "type %q", e.Type), nil
}

// session returns the session an envelope names, checking that a caller
// who came through HTTP ingest owns it.
func (b *batch) session(m streams.Message, e *streams.Envelope) (*Session, error) {
	s := b.sessions[e.SessionID]
	if s == nil {
		return nil, streams.Reject(streams.ReasonUnknownSession, "session %s has no start", e.SessionID)
	}
	if org := m.Header.Get(streams.HeaderOrg); org != "" &&
		(org != s.Org || m.Header.Get(streams.HeaderMember) != s.Member) {
		// Same words as a missing session: the caller learns nothing.
		return nil, streams.Reject(streams.ReasonOwnerMismatch, "session %s has no start", e.SessionID)
	}
	if runner := m.Header.Get(streams.HeaderRunner); runner != "" && runner != s.WorkerID {
		// A runner writes only the sessions it started (its start made it
		// the workerId): not its member's others, whatever reached the door.
		return nil, streams.Reject(streams.ReasonOwnerMismatch, "session %s has no start", e.SessionID)
	}
	return s, nil
}

// attribute names whose dead letter a rejection is, for a message no
// verified caller sent: a start's own owner (never the owner of the session
// it collided with), else the owner of the session the message was for.
func (b *batch) attribute(e *streams.Envelope, res error) error {
	rej, ok := res.(*streams.Rejection)
	if !ok {
		return res
	}
	claims := e.Type == streams.TypeSessionStart || e.Type == streams.TypeSessionTelemetry
	if claims && e.Owner != nil {
		rej.Owner = *e.Owner
	} else if s := b.sessions[e.SessionID]; s != nil && !claims {
		rej.Owner = streams.Owner{Org: s.Org, Member: s.Member}
	}
	return rej
}

func (b *batch) start(m streams.Message, e *streams.Envelope) error {
	if s := b.sessions[e.SessionID]; s != nil && s.Origin == OriginTelemetry && s.owner() == *e.Owner {
		if err := checkCaller(m, *e.Owner); err != nil {
			return err
		}
		b.merge(s, m, e)
		return nil
	}
	if held, ok := b.claims[e.SessionID]; b.sessions[e.SessionID] != nil || (ok && held != *e.Owner) {
		// Held by another owner's claim at the door, its start not yet
		// projected: the same words, and the id stays the holder's.
		return streams.Reject(streams.ReasonDuplicateStart, "session %s already started", e.SessionID)
	}
	if err := checkCaller(m, *e.Owner); err != nil {
		return err
	}
	s := &Session{ID: e.SessionID, Org: e.Owner.Org, Member: e.Owner.Member, App: e.App, Kind: e.Kind,
		Level: e.Level, AppSessionRef: e.AppSessionRef, Workspace: e.Workspace, PlanID: e.PlanID,
		TaskID: e.TaskID, StepID: e.StepID, ParentRunID: e.ParentRunID, WorkerID: e.WorkerID,
		Status: StatusRunning, SessionRunID: RunID(e.SessionID), Complete: true,
		Partition: streams.Partition(e.SessionID, b.r.parts),
		StartedAt: e.At, UpdatedAt: e.At, received: storedAt(m), isNew: true}
	if e.Prompt != "" {
		s.PromptDigest = b.putBlob([]byte(e.Prompt))
	}
	b.sessions[s.ID] = s
	b.work.AddRun(spine.Run{ID: s.SessionRunID, Kind: spine.KindSessionRecording, Org: s.Org,
		Member: s.Member, SessionID: s.ID, ParentRunID: e.ParentRunID, ParentStepID: e.StepID, CreatedAt: e.At})
	return nil
}

// RunID is the id of a session's recording run.
func RunID(sessionID string) string { return "run-" + sessionID }

func (b *batch) chunk(ctx context.Context, m streams.Message, e *streams.Envelope) (error, error) {
	s, err := b.session(m, e)
	if err != nil {
		return err, nil
	}
	if e.Seq <= s.LastSeq {
		return b.behind(ctx, s, e)
	}
	if s.Ended() {
		return streams.Reject(streams.ReasonSessionEnded, "chunk %d after the session ended", e.Seq), nil
	}
	if gap := e.Seq - s.LastSeq - 1; gap > 0 {
		b.hole(s, e, gap)
	}
	s.LastSeq, s.UpdatedAt, s.dirty = e.Seq, e.At, true
	s.heard(m)
	if e.Stream != "event" {
		b.chunks = append(b.chunks, batchChunk{s.ID, Chunk{Seq: e.Seq, Stream: e.Stream, Text: e.Text, At: tableTime(e.At)}})
		return nil, nil
	}
	b.event(s, e)
	return nil, nil
}

// behind drops a chunk whose seq is not after the session's last: neither
// is recorded nor counted on the row. A repeat of a seq recorded (a
// producer's retry) is a silent duplicate; one whose seq fell in a hole came
// after chunks past it (two racing requests) and is dead-lettered
// out_of_order, so that the 202 it got ends in something its owner can see.
func (b *batch) behind(ctx context.Context, s *Session, e *streams.Envelope) (error, error) {
	late, err := b.inHole(ctx, s, e.Seq)
	if err != nil {
		return nil, err
	}
	if late {
		return streams.Reject(streams.ReasonOutOfOrder, "chunk %d arrived after chunk %d: not recorded, its seq is in a hole",
			e.Seq, s.LastSeq), nil
	}
	b.r.m.dropped.WithLabelValues("duplicate").Inc()
	return errDuplicate, nil
}

// inHole reports whether seq is one of the session's missing chunks. A
// session without holes has recorded every seq up to its last; one with
// holes has them as notes, on the database or in this batch.
func (b *batch) inHole(ctx context.Context, s *Session, seq int64) (bool, error) {
	if s.Complete {
		return false, nil
	}
	for _, h := range s.holes {
		if h[0] <= seq && seq <= h[1] {
			return true, nil
		}
	}
	var in bool
	err := b.tx.QueryRow(ctx, inHoleSQL, s.SessionRunID, seq).Scan(&in)
	if err != nil {
		return false, fmt.Errorf("find the hole of chunk %d of %s: %w", seq, s.ID, err)
	}
	return in, nil
}

// hole records missing sequence numbers as a note and on the row.
func (b *batch) hole(s *Session, e *streams.Envelope, gap int64) {
	s.DroppedActions = int(min(int64(s.DroppedActions)+gap, math.MaxInt32)) // int4 on the row: saturate, never overflow
	s.Complete = false
	s.holes = append(s.holes, [2]int64{s.LastSeq + 1, e.Seq - 1})
	b.r.m.holes.Add(float64(gap))
	body, _ := json.Marshal(map[string]any{"note": "hole", "from": s.LastSeq + 1, "to": e.Seq - 1,
		"missing": gap, "message": fmt.Sprintf("chunks %d..%d never arrived: the recording is incomplete", s.LastSeq+1, e.Seq-1)})
	b.observe(s, "", spine.ObsNote, body, e.At)
}

func (b *batch) observe(s *Session, stepID, kind string, body []byte, at time.Time) {
	s.observations++
	s.dirty = true
	b.work.AddObservation(spine.Observation{RunID: s.SessionRunID, Idx: s.observations, StepID: stepID,
		Kind: kind, Body: body, At: at})
}

func (b *batch) addStep(s *Session, action, source string, seq *int64, callID string, detail, result map[string]any, at time.Time) string {
	s.RecordedSteps++
	s.observations++
	s.dirty = true
	idx := s.RecordedSteps + s.superseded // after every step the run ever had (merge_steps.go)
	id := spine.StepID(s.SessionRunID, idx)
	b.steps = append(b.steps, &pendingStep{
		step: spine.Step{RunID: s.SessionRunID, Idx: idx, ID: id, Action: action,
			Source: source, SessionSeq: seq, CallID: callID, At: at},
		obs:    spine.Observation{RunID: s.SessionRunID, Idx: s.observations, StepID: id, Kind: spine.ObsResult, At: at},
		detail: detail, result: result})
	if callID != "" {
		b.calls[s.SessionRunID+"\x00"+callID] = id
	}
	return id
}

func (b *batch) control(m streams.Message, e *streams.Envelope) error {
	s, err := b.session(m, e)
	if err != nil {
		return err
	}
	if s.Ended() {
		return streams.Reject(streams.ReasonSessionEnded, "control %s after the session ended", e.Control)
	}
	// Only the control's name and reason: never a credential, even a renewed one.
	body, _ := json.Marshal(map[string]string{"control": e.Control, "reason": e.Reason})
	b.observe(s, "", spine.ObsControl, body, e.At)
	s.UpdatedAt = e.At
	s.heard(m)
	if e.Control == ControlCancel && s.cancelRequested == nil {
		s.cancelRequested = storedAt(m) // the grace runs from the first cancel
	}
	return nil
}

// storedAt is when JetStream stored m, to the microsecond the row keeps (so
// a time held in a batch equals the same time read back from the row); nil
// for a message that never went through it (it then never counts as heard).
func storedAt(m streams.Message) *time.Time {
	if m.Time.IsZero() {
		return nil
	}
	t := m.Time.Truncate(time.Microsecond)
	return &t
}

// heard notes that the running session received m: its idle time starts over.
func (s *Session) heard(m streams.Message) {
	if t := storedAt(m); t != nil && !s.Ended() {
		s.received, s.dirty = t, true
	}
}

func (b *batch) end(m streams.Message, e *streams.Envelope) error {
	s, err := b.session(m, e)
	if err != nil {
		return err
	}
	if swept(m, e) && !s.stillDue(e) {
		return errDuplicate // counted as a duplicate session.end
	}
	if s.Ended() {
		return streams.Reject(streams.ReasonSessionEnded, "session %s already ended", s.ID)
	}
	s.Status, s.ExitCode, s.Error = e.Status, e.ExitCode, e.Error
	s.Model, s.Effort = e.Model, e.Effort // as reported; empty means unknown
	// A telemetry session the sweeper ends keeps its telemetry's billing
	// (the sweeper reports none), and its telemetry may run it again.
	s.swept = swept(m, e) && s.Origin == OriginTelemetry
	if !s.swept {
		s.Billing, s.Door = e.Billing, e.Door
	}
	if !swept(m, e) || e.Usage != nil {
		// The end's usage replaces the running one (session.usage), none
		// included; the sweeper's reports nothing, so the running usage
		// and cost stand (as on the router-call row, docs/counting.md).
		s.TotalCost, s.Usage = e.TotalCost, nil
		if e.Usage != nil {
			s.Usage, _ = json.Marshal(e.Usage)
		}
	}
	b.endArtifacts(s, e)
	b.finish(s, e.At)
	return nil
}

// usage keeps a running session's usage so far on its row: the last
// session.usage until the end replaces it. Nothing counts it (the
// router-call row is the end's). One that comes after the end is passed
// over as a duplicate: the end's usage stands.
func (b *batch) usage(m streams.Message, e *streams.Envelope) error {
	s, err := b.session(m, e)
	if err != nil {
		return err
	}
	if s.Ended() {
		return errDuplicate
	}
	s.Usage, _ = json.Marshal(e.Usage)
	s.TotalCost = e.TotalCost
	if e.At.After(s.UpdatedAt) {
		s.UpdatedAt = e.At
	}
	s.dirty = true
	s.heard(m)
	return nil
}

// swept reports whether e is an end the sweeper published: its id is the
// one the sweeper derives from what it says, and no caller sent it through
// HTTP ingest.
func swept(m streams.Message, e *streams.Envelope) bool {
	return e.SweptSince != nil && m.Header.Get(streams.HeaderOrg) == "" &&
		e.ID == SweptEndID(e.SessionID, e.Status, *e.SweptSince)
}

// stillDue reports whether the sweeper's end e still holds: the session
// runs and nothing was stored for it after the time the sweeper judged it
// by (its first cancel's for a grace end, else its last envelope's). The
// sweeper read that time from a row that may lag the log: an end judged on
// a stale row, or stored again after the session ended, is dropped. Both
// times are the log's, so a rebuild decides the same way. "Not after"
// rather than "equal": a row running across migration 009 was given the
// upgrade's time, later than any its rebuild sees, and its end must be
// replayed too.
func (s *Session) stillDue(e *streams.Envelope) bool {
	judged := s.received
	if e.Status == StatusCancelled { // as the id says: see sweptEnd
		judged = s.cancelRequested
	}
	return !s.Ended() && judged != nil && !judged.After(*e.SweptSince)
}

func (b *batch) finish(s *Session, at time.Time) {
	s.EndedAt, s.UpdatedAt = &at, at
	s.dirty, s.needsFinal = true, true
	s.received, s.cancelRequested = nil, nil // the sweeper's only; see migration 009
	b.r.m.ended.WithLabelValues(s.App, s.Status).Inc()
	b.sumAgain(s) // a telemetry session ends with its ledger's usage, whatever ended it
}

// disconnect ends every live session on the worker with a named error.
// One that came through HTTP ingest ends only its caller's sessions.
func (b *batch) disconnect(ctx context.Context, m streams.Message, e *streams.Envelope) error {
	org, member := m.Header.Get(streams.HeaderOrg), m.Header.Get(streams.HeaderMember)
	partition := -1
	if b.r.parts > 1 {
		partition = b.r.part
	}
	live, err := liveOnWorker(ctx, b.tx, e.WorkerID, partition)
	if err != nil {
		return err
	}
	for _, s := range live {
		if b.sessions[s.ID] == nil {
			b.sessions[s.ID], b.before[s.ID] = s, s.LastSeq
		}
	}
	for _, s := range b.sortedSessions() {
		if s.WorkerID != e.WorkerID || s.Ended() || (org != "" && (s.Org != org || s.Member != member)) ||
			(partition >= 0 && s.Partition != partition) {
			continue
		}
		s.Status = "disconnected"
		s.Error = fmt.Sprintf("worker_disconnected: worker %s disconnected", e.WorkerID)
		if e.Reason != "" {
			s.Error += ": " + e.Reason
		}
		b.finish(s, e.At)
	}
	return nil
}

func (b *batch) sortedSessions() []*Session {
	out := make([]*Session, 0, len(b.sessions))
	for _, s := range b.sessions {
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y *Session) int {
		if x.ID < y.ID {
			return -1
		}
		if x.ID > y.ID {
			return 1
		}
		return 0
	})
	return out
}
