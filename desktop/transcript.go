package desktop

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/recorder"
	"github.com/spinehq/spine/streams"
)

// Entry sources: what the task and its runner reported, or the app session
// the runner recorded for the task.
const (
	SourceTask    = "task"
	SourceSession = "session"
)

// KindEnd is the task entry of a task's end: its final state and error.
const KindEnd = "end"

// RecordedSession is an app session a runner recorded for one of a remote
// session's tasks (a session.start with that taskId): the same session as
// GET /v1/sessions/{id}.
type RecordedSession struct {
	SessionID string    `json:"sessionId"`
	TaskID    string    `json:"taskId"`
	Status    string    `json:"status"`
	Ended     bool      `json:"ended"`
	LastSeq   int64     `json:"lastSeq"`
	StartedAt time.Time `json:"startedAt"`
	runID     string
	task      int // the task's place in the remote session
}

// taskRef is a task of a remote session in the order it was queued: the
// position of its prompt entry.
type taskRef struct {
	id      string
	state   string
	prompt  int64
	claimed bool       // a runner took it: it may have recorded a session
	endedAt *time.Time // when it ended
}

// foldAfter is how long after a task that ran ends without a recorded
// session the cursor stops looking for one: its start may still be on its
// way through the recorder.
const foldAfter = time.Minute

// cursor is what a reader has seen of each source of a remote session's
// transcript; it travels as an opaque string (docs/desktop.md#reading).
type cursor struct {
	Events int64            `json:"e,omitempty"` // the last task entry (desktop_task_events.pos) read
	Done   int              `json:"d,omitempty"` // leading tasks whose recorded sessions are ended and read through
	Seqs   map[string]int64 `json:"s,omitempty"` // recorded session → last seq read, for the tasks from Done on
}

// Cursor bounds: a cursor names the sessions still being read, never many.
const (
	cursorPrefix      = "c1."
	maxCursorLen      = 16 << 10
	maxCursorSessions = 256
)

var errBadCursor = invalid(`since must be "0" (from the start) or the next of an earlier read of this session`)

func parseCursor(s string) (cursor, error) {
	if s == "" || s == "0" {
		return cursor{}, nil
	}
	rest, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok || len(s) > maxCursorLen {
		return cursor{}, errBadCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return cursor{}, errBadCursor
	}
	var c cursor
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if dec.Decode(&c) != nil || c.Events < 0 || c.Done < 0 || len(c.Seqs) > maxCursorSessions {
		return cursor{}, errBadCursor
	}
	for id, seq := range c.Seqs {
		if !streams.ValidID(id) || seq < 0 {
			return cursor{}, errBadCursor
		}
	}
	return c, nil
}

func (c cursor) String() string {
	if c.Events == 0 && c.Done == 0 && len(c.Seqs) == 0 {
		return "0"
	}
	b, _ := json.Marshal(c) // map keys in order: one state, one string
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// item is one candidate entry and where it sorts: task entries by their
// position; a recorded session's content right after its task's prompt, in
// session order, by seq. Each source is read in its own order and a page
// is a prefix of the merge, so the cursor can say how far each source went.
type item struct {
	anchor  int64 // task entry: its pos; session content: its task's prompt pos
	rank    int   // 0 task entry, 1 session content
	session int   // index in the recorded sessions
	seq     int64
	entry   Entry
}

func (a item) less(b item) int {
	for _, d := range []int64{a.anchor - b.anchor, int64(a.rank - b.rank), int64(a.session - b.session), a.seq - b.seq} {
		if d != 0 {
			return int(max(-1, min(1, d)))
		}
	}
	return 0
}

// read assembles one page of the transcript of sessionID after cur.
func (s *Service) read(ctx context.Context, owner streams.Owner, sess *Session, cur cursor, limit int) (*ReadResult, error) {
	tasks, err := s.sessionTasks(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	recorded, err := s.recordedSessions(ctx, owner, tasks)
	if err != nil {
		return nil, err
	}
	withSessions := []string{}
	for _, rs := range recorded {
		withSessions = append(withSessions, rs.TaskID)
	}
	entries, err := s.taskEntries(ctx, sess.ID, cur.Events, limit+1, slices.Compact(withSessions))
	if err != nil {
		return nil, err
	}
	items := make([]item, 0, len(entries))
	for _, en := range entries {
		items = append(items, item{anchor: en.pos, entry: en})
	}
	exhausted := map[string]bool{}
	for i := range recorded {
		rs := &recorded[i]
		seen := cur.Seqs[rs.SessionID]
		if rs.task < cur.Done || (rs.Ended && seen >= rs.LastSeq) {
			continue
		}
		content, all, err := s.sessionContent(ctx, owner, rs, seen, limit)
		if err != nil {
			return nil, err
		}
		exhausted[rs.SessionID] = all
		for _, en := range content {
			items = append(items, item{anchor: tasks[rs.task].prompt, rank: 1, session: i, seq: en.Seq, entry: en})
		}
	}
	slices.SortFunc(items, item.less)
	res := &ReadResult{Session: sess, Entries: []Entry{}, RecordedSessions: recorded, More: len(items) > limit}
	left := map[string]int{} // per recorded session, its candidates past the page
	if res.More {
		for _, it := range items[limit:] {
			if it.rank == 1 {
				left[it.entry.SessionID]++
			}
		}
		items = items[:limit]
	}
	next := cursor{Events: cur.Events, Done: cur.Done, Seqs: maps.Clone(cur.Seqs)}
	if next.Seqs == nil {
		next.Seqs = map[string]int64{}
	}
	for _, it := range items {
		res.Entries = append(res.Entries, it.entry)
		if it.rank == 0 {
			next.Events = it.entry.pos
		} else {
			next.Seqs[it.entry.SessionID] = it.seq
		}
	}
	for _, rs := range recorded {
		// Everything stored was returned: read through the session's last
		// seq, which seqs no entry carries (a protocol call) may end with.
		if exhausted[rs.SessionID] && left[rs.SessionID] == 0 {
			next.Seqs[rs.SessionID] = max(next.Seqs[rs.SessionID], rs.LastSeq)
		}
	}
	next.fold(tasks, recorded, s.now())
	res.Next = next.String()
	res.Ended = Ended(sess.State) && !res.More
	for _, rs := range recorded {
		res.Ended = res.Ended && rs.Ended
	}
	return res, nil
}

// fold moves Done past the leading tasks that are over and whose recorded
// sessions are ended and read through, and forgets their seqs: the cursor
// stays small however many tasks a session has. A task that ran and shows
// no session yet is folded only foldAfter after its end.
func (c *cursor) fold(tasks []taskRef, recorded []RecordedSession, now time.Time) {
	for c.Done < len(tasks) && Ended(tasks[c.Done].state) {
		t := tasks[c.Done]
		var ids []string
		for _, rs := range recorded {
			if rs.task != c.Done {
				continue
			}
			if !rs.Ended || c.Seqs[rs.SessionID] < rs.LastSeq {
				return
			}
			ids = append(ids, rs.SessionID)
		}
		if len(ids) == 0 && t.claimed && t.state != StateRefused && (t.endedAt == nil || now.Sub(*t.endedAt) < foldAfter) {
			return
		}
		for _, id := range ids {
			delete(c.Seqs, id)
		}
		c.Done++
	}
}

// sessionTasks lists a remote session's tasks in the order they were queued.
func (s *Service) sessionTasks(ctx context.Context, sessionID string) ([]taskRef, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT e.task_id, t.state, e.pos, t.claimed_by <> '', t.ended_at FROM desktop_task_events e
		JOIN desktop_tasks t ON t.id = e.task_id
		WHERE e.remote_session_id = $1 AND e.kind = 'prompt' ORDER BY e.pos`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("read tasks of %s: %w", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (taskRef, error) {
		var t taskRef
		return t, r.Scan(&t.id, &t.state, &t.prompt, &t.claimed, &t.endedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("read tasks of %s: %w", sessionID, err)
	}
	return out, nil
}

// recordedSessions lists the owner's sessions recorded for the tasks, in
// task order, then by start.
func (s *Service) recordedSessions(ctx context.Context, owner streams.Owner, tasks []taskRef) ([]RecordedSession, error) {
	place := map[string]int{}
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		place[t.id], ids[i] = i, t.id
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT id, task_id, status, last_seq, ended_at IS NOT NULL, started_at, session_run_id
		FROM sessions WHERE task_id = ANY($1) AND org = $2 AND member = $3 ORDER BY started_at, id`, ids, owner.Org, owner.Member)
	if err != nil {
		return nil, fmt.Errorf("read recorded sessions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RecordedSession, error) {
		var rs RecordedSession
		err := r.Scan(&rs.SessionID, &rs.TaskID, &rs.Status, &rs.LastSeq, &rs.Ended, &rs.StartedAt, &rs.runID)
		rs.task, rs.StartedAt = place[rs.TaskID], rs.StartedAt.UTC()
		return rs, err
	})
	if err != nil {
		return nil, fmt.Errorf("read recorded sessions: %w", err)
	}
	slices.SortStableFunc(out, func(a, b RecordedSession) int { return a.task - b.task })
	if out == nil {
		out = []RecordedSession{}
	}
	return out, nil
}

// taskEntries reads task entries with pos > since, at most limit. A task
// with a recorded session reads its assistant text from that session, so
// the runner's assistant_text events of such a task are left out.
func (s *Service) taskEntries(ctx context.Context, sessionID string, since int64, limit int, withSessions []string) ([]Entry, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT pos, task_id, seq, kind, text, data, at FROM desktop_task_events
		WHERE remote_session_id = $1 AND pos > $2 AND NOT (kind = 'assistant_text' AND task_id = ANY($4))
		ORDER BY pos LIMIT $3`, sessionID, since, limit, withSessions)
	if err != nil {
		return nil, fmt.Errorf("read transcript of %s: %w", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Entry, error) {
		e := Entry{Source: SourceTask}
		var data []byte
		err := r.Scan(&e.pos, &e.TaskID, &e.Seq, &e.Kind, &e.Text, &data, &e.At)
		e.Data, e.At = data, e.At.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read transcript of %s: %w", sessionID, err)
	}
	return out, nil
}

// sessionContent reads a recorded session's entries with seq > since: its
// stdout and stderr chunks (redacted across chunk boundaries, as its
// transcript reads) and its events (the steps the recorder made of them),
// in seq order, at most limit of each. all says nothing more is stored
// past them; otherwise only entries up to the first source's cut are
// returned, so the cursor never passes an entry it did not return.
func (s *Service) sessionContent(ctx context.Context, owner streams.Owner, rs *RecordedSession, since int64, limit int) ([]Entry, bool, error) {
	page, err := recorder.ReadTranscript(ctx, s.cfg.Pool, owner, rs.SessionID, since, limit)
	if errors.Is(err, recorder.ErrNotFound) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	events, eventsMore, err := s.sessionEvents(ctx, rs, since, limit)
	if err != nil {
		return nil, false, err
	}
	bound := int64(-1) // the highest seq both sources were read through; -1: no bound
	if page.More {
		bound = page.Next
	}
	if eventsMore && (bound < 0 || events[len(events)-1].Seq < bound) {
		bound = events[len(events)-1].Seq
	}
	out := make([]Entry, 0, len(page.Chunks)+len(events))
	for _, c := range page.Chunks {
		out = append(out, Entry{TaskID: rs.TaskID, Source: SourceSession, SessionID: rs.SessionID, Seq: c.Seq,
			Kind: c.Stream, Text: c.Text, At: c.At.UTC()})
	}
	out = append(out, events...)
	slices.SortFunc(out, func(a, b Entry) int { return int(max(-1, min(1, a.Seq-b.Seq))) })
	if bound >= 0 {
		out = slices.DeleteFunc(out, func(e Entry) bool { return e.Seq > bound })
	}
	return out, bound < 0, nil
}

// sessionEvents reads the steps a recorded session's event chunks became,
// with their results: kind "event", data {action, detail, result}.
func (s *Service) sessionEvents(ctx context.Context, rs *RecordedSession, since int64, limit int) ([]Entry, bool, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT st.session_seq, st.action, st.detail, o.body, st.at FROM steps st
		LEFT JOIN observations o ON o.run_id = st.run_id AND o.step_id = st.id AND o.kind = 'result'
		WHERE st.run_id = $1 AND st.source = 'session' AND st.session_seq > $2 ORDER BY st.session_seq LIMIT $3`,
		rs.runID, since, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("read events of %s: %w", rs.SessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Entry, error) {
		e := Entry{TaskID: rs.TaskID, Source: SourceSession, SessionID: rs.SessionID, Kind: "event"}
		var action string
		var detail, result json.RawMessage
		if err := r.Scan(&e.Seq, &action, &detail, &result, &e.At); err != nil {
			return e, err
		}
		e.At = e.At.UTC()
		e.Data, _ = json.Marshal(struct {
			Action string          `json:"action"`
			Detail json.RawMessage `json:"detail"`
			Result json.RawMessage `json:"result,omitempty"`
		}{action, detail, result})
		return e, nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("read events of %s: %w", rs.SessionID, err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// RecordedProgress is a mark of how far the sessions recorded for the
// remote session's tasks have come: it changes whenever one of them gets an
// envelope or starts or ends. A live page polls it, since those sessions
// are the recorder's, whose writes the desktop service does not hear of.
func (s *Service) RecordedProgress(ctx context.Context, owner streams.Owner, sessionID string) (string, error) {
	var n, ended, seqs int64
	err := s.cfg.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE ended_at IS NOT NULL), coalesce(sum(last_seq), 0)
		FROM sessions WHERE task_id IN (SELECT id FROM desktop_tasks WHERE remote_session_id = $1 AND org = $2 AND member = $3)
		AND org = $2 AND member = $3`, sessionID, owner.Org, owner.Member).Scan(&n, &ended, &seqs)
	if err != nil {
		return "", fmt.Errorf("progress of %s: %w", sessionID, err)
	}
	return fmt.Sprintf("%d:%d:%d", n, ended, seqs), nil
}
