package desktop

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
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
// session's tasks (a session.start with that taskId, linked to the task
// when spine took it): the same session as GET /v1/sessions/{id}.
type RecordedSession struct {
	SessionID string    `json:"sessionId"`
	TaskID    string    `json:"taskId"`
	Status    string    `json:"status"`
	Ended     bool      `json:"ended"`
	LastSeq   int64     `json:"lastSeq"`
	StartedAt time.Time `json:"startedAt"`
	runID     string
	task      int // the task's place in the remote session
	link      int // its place among the task's links
}

// taskRef is a task of a remote session in the order it was queued: the
// position of its prompt entry.
type taskRef struct {
	id     string
	state  string
	prompt int64
	links  []linkRef // in link order
}

// linkRef is one session linked to a task: the recorded session it is (an
// index into the read's recorded sessions), or linkPending (the recorder
// has not projected it yet) or linkForeign (the recorder gave that id to
// another start: never this task's).
type linkRef struct {
	pos int
	rec int
}

const (
	linkPending = -1
	linkForeign = -2
)

// cursor is what a reader has seen of each source of a remote session's
// transcript; it travels as an opaque string (docs/desktop.md#reading).
type cursor struct {
	Events int64            `json:"e,omitempty"` // the last task entry (desktop_task_events.pos) read
	Done   int              `json:"d,omitempty"` // leading tasks whose recorded sessions are ended and read through
	Links  int              `json:"k,omitempty"` // leading links of task Done whose sessions are ended and read through
	Seqs   map[string]int64 `json:"s,omitempty"` // recorded session → last seq read, for the sessions past those
}

// Cursor bounds: a cursor names the sessions still being read, never many.
// A page reads no session the cursor would have no room for (see room).
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
	if dec.Decode(&c) != nil || c.Events < 0 || c.Done < 0 || c.Links < 0 || len(c.Seqs) > maxCursorSessions {
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
	if c.Events == 0 && c.Done == 0 && c.Links == 0 && len(c.Seqs) == 0 {
		return "0"
	}
	b, _ := json.Marshal(c) // map keys in order: one state, one string
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// room tracks how large the next cursor can get: every session it names
// costs its id and a seq. A page stops before a session that would not fit.
type room struct {
	sessions, bytes int
}

// cursorSlack covers what else of a cursor can grow within a page (the
// digits of e and d, the braces of s); cursorEntry is one session's
// "id":seq, beyond the id.
const (
	cursorSlack = 64
	cursorEntry = len(`,"":`) + 19
)

func newRoom(c cursor) room {
	b, _ := json.Marshal(c)
	return room{sessions: len(c.Seqs), bytes: len(b) + cursorSlack}
}

// take makes room for one more session, or says there is none.
func (r *room) take(id string) bool {
	n, b := r.sessions+1, r.bytes+len(id)+cursorEntry
	if n > maxCursorSessions || len(cursorPrefix)+base64.RawURLEncoding.EncodedLen(b) > maxCursorLen {
		return false
	}
	r.sessions, r.bytes = n, b
	return true
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

// before counts the items that sort before key.
func before(items []item, key item) int {
	n := 0
	for _, it := range items {
		if it.less(key) < 0 {
			n++
		}
	}
	return n
}

// readTx reads one page in one read-only REPEATABLE READ transaction: every
// source is read from one snapshot, so a session's chunk and its later
// event can never be seen one without the other.
func (s *Service) readTx(ctx context.Context, owner streams.Owner, sessionID string, cur cursor, limit int) (*ReadResult, error) {
	tx, err := s.cfg.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("begin read of %s: %w", sessionID, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only: nothing to keep
	sess, err := s.session(ctx, tx, owner, sessionID)
	if err != nil {
		return nil, err
	}
	return s.read(ctx, tx, owner, sess, cur, limit)
}

// read assembles one page of the transcript of sess after cur.
func (s *Service) read(ctx context.Context, q streams.Querier, owner streams.Owner, sess *Session, cur cursor, limit int) (*ReadResult, error) {
	tasks, err := sessionTasks(ctx, q, sess.ID)
	if err != nil {
		return nil, err
	}
	recorded, err := recordedSessions(ctx, q, owner, sess.ID, tasks)
	if err != nil {
		return nil, err
	}
	entries, err := taskEntries(ctx, q, sess.ID, cur.Events, limit+1, linkedTasks(tasks))
	if err != nil {
		return nil, err
	}
	items := make([]item, 0, len(entries))
	for _, en := range entries {
		items = append(items, item{anchor: en.pos, entry: en})
	}
	items, exhausted, cut, err := s.readSessions(ctx, q, items, tasks, recorded, cur, limit)
	if err != nil {
		return nil, err
	}
	res := &ReadResult{Session: sess, Entries: []Entry{}, RecordedSessions: recorded, More: cut || len(items) > limit}
	left := map[string]int{} // per recorded session, its candidates past the page
	if len(items) > limit {
		for _, it := range items[limit:] {
			if it.rank == 1 {
				left[it.entry.SessionID]++
			}
		}
		items = items[:limit]
	}
	next := cursor{Events: cur.Events, Done: cur.Done, Links: cur.Links, Seqs: maps.Clone(cur.Seqs)}
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
	next.fold(tasks, recorded)
	res.Next = next.String()
	// Ended only once the cursor folded every task: one it still waits on
	// (a linked session on its way, or not read through) is not over.
	res.Ended = Ended(sess.State) && !res.More && next.Done == len(tasks)
	return res, nil
}

// readSessions adds the recorded sessions' content after cur to items,
// sorted: in the order the sessions sort, each read only with the budget
// left once what sorts before it is counted, and none once a page is full
// (so a read costs about one page, however many sessions are live), nor
// past a session the cursor has no room for. exhausted says which sessions
// were read through what is stored; cut, that something stored sorts past
// what was read (more is stored past the page).
func (s *Service) readSessions(ctx context.Context, q streams.Querier, items []item, tasks []taskRef,
	recorded []RecordedSession, cur cursor, limit int) ([]item, map[string]bool, bool, error) {
	exhausted := map[string]bool{}
	cut := false
	space := newRoom(cur)
	var barrier *item // the page ends before this session's content
	for i := range recorded {
		rs := &recorded[i]
		seen, named := cur.Seqs[rs.SessionID]
		if cur.folded(rs) || (rs.Ended && seen >= rs.LastSeq) {
			continue
		}
		key := item{anchor: tasks[rs.task].prompt, rank: 1, session: i}
		budget := limit + 1 - before(items, key)
		if budget <= 0 {
			break // this and every later session sort past the page
		}
		if !named && !space.take(rs.SessionID) {
			barrier, cut = &key, true
			break
		}
		content, all, err := sessionContent(ctx, q, rs, seen, budget)
		if err != nil {
			return nil, nil, false, err
		}
		exhausted[rs.SessionID], cut = all, cut || !all
		for _, en := range content {
			items = append(items, item{anchor: key.anchor, rank: 1, session: i, seq: en.Seq, entry: en})
		}
	}
	slices.SortFunc(items, item.less)
	if barrier != nil {
		items = items[:before(items, *barrier)]
	}
	return items, exhausted, cut, nil
}

// folded: the cursor read rs through and forgot it.
func (c cursor) folded(rs *RecordedSession) bool {
	return rs.task < c.Done || (rs.task == c.Done && rs.link <= c.Links)
}

// fold moves the cursor past the leading linked sessions, in task order
// and each task's link order, that are projected, ended and read through,
// and forgets their seqs: Links past those of task Done, Done past the
// tasks that are over with every link folded. So the cursor stays small
// however many tasks and sessions a remote session has. Every link of a
// task is stored before its end (LinkSession), so an ended task with its
// links folded has nothing more on its way, however far the recorder lags;
// a link not projected yet holds the fold where it is.
func (c *cursor) fold(tasks []taskRef, recorded []RecordedSession) {
	for c.Done < len(tasks) {
		t := tasks[c.Done]
		for _, l := range t.links {
			if l.pos <= c.Links {
				continue
			}
			if l.rec == linkPending {
				return
			}
			if l.rec >= 0 {
				rs := recorded[l.rec]
				if !rs.Ended || c.Seqs[rs.SessionID] < rs.LastSeq {
					return
				}
				delete(c.Seqs, rs.SessionID)
			}
			c.Links = l.pos
		}
		if !Ended(t.state) {
			return
		}
		c.Done, c.Links = c.Done+1, 0
	}
}

// linkedTasks are the ids of the tasks a runner linked a session to.
func linkedTasks(tasks []taskRef) []string {
	ids := []string{}
	for _, t := range tasks {
		if slices.ContainsFunc(t.links, func(l linkRef) bool { return l.rec != linkForeign }) {
			ids = append(ids, t.id)
		}
	}
	return ids
}

// sessionTasks lists a remote session's tasks in the order they were queued.
func sessionTasks(ctx context.Context, q streams.Querier, sessionID string) ([]taskRef, error) {
	rows, err := q.Query(ctx, `SELECT e.task_id, t.state, e.pos FROM desktop_task_events e
		JOIN desktop_tasks t ON t.id = e.task_id
		WHERE e.remote_session_id = $1 AND e.kind = 'prompt' ORDER BY e.pos`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("read tasks of %s: %w", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (taskRef, error) {
		var t taskRef
		return t, r.Scan(&t.id, &t.state, &t.prompt)
	})
	if err != nil {
		return nil, fmt.Errorf("read tasks of %s: %w", sessionID, err)
	}
	return out, nil
}

// recordedSessionsSQL reads a remote session's links and the sessions they
// name (by primary key: desktop_task_sessions_remote, then sessions_pkey).
// A session is the task's only if the recorder took it from the runner's
// start: the task's id and the runner's id on the owner's row.
const recordedSessionsSQL = `SELECT l.session_id, l.task_id, l.pos, s.id IS NOT NULL,
	coalesce(s.org = l.org AND s.member = l.member AND s.task_id = l.task_id AND s.worker_id = l.runner_id, false),
	coalesce(s.status, ''), coalesce(s.last_seq, 0), s.ended_at IS NOT NULL, coalesce(s.started_at, l.at),
	coalesce(s.session_run_id, '')
	FROM desktop_task_sessions l LEFT JOIN sessions s ON s.id = l.session_id
	WHERE l.remote_session_id = $1 AND l.org = $2 AND l.member = $3`

// recordedSessions lists the sessions linked to the tasks and projected,
// in task order, then link order, and lists on each task its links. A link
// whose session the recorder gave to another start (another owner's, or
// one without this task and runner) is not the task's: it is left out.
func recordedSessions(ctx context.Context, q streams.Querier, owner streams.Owner, sessionID string, tasks []taskRef) ([]RecordedSession, error) {
	place := map[string]int{}
	for i, t := range tasks {
		place[t.id] = i
	}
	rows, err := q.Query(ctx, recordedSessionsSQL, sessionID, owner.Org, owner.Member)
	if err != nil {
		return nil, fmt.Errorf("read recorded sessions: %w", err)
	}
	defer rows.Close()
	out := []RecordedSession{}
	type found struct {
		task int
		link linkRef
	}
	var links []found
	for rows.Next() {
		var rs RecordedSession
		var projected, theirs bool
		if err := rows.Scan(&rs.SessionID, &rs.TaskID, &rs.link, &projected, &theirs, &rs.Status, &rs.LastSeq, &rs.Ended,
			&rs.StartedAt, &rs.runID); err != nil {
			return nil, fmt.Errorf("read recorded sessions: %w", err)
		}
		i, ok := place[rs.TaskID]
		switch {
		case !ok:
		case !projected:
			links = append(links, found{i, linkRef{pos: rs.link, rec: linkPending}})
		case !theirs:
			links = append(links, found{i, linkRef{pos: rs.link, rec: linkForeign}})
		default:
			rs.task, rs.StartedAt = i, rs.StartedAt.UTC()
			out = append(out, rs)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read recorded sessions: %w", err)
	}
	slices.SortFunc(out, func(a, b RecordedSession) int { return cmp.Or(a.task-b.task, a.link-b.link) })
	for j, rs := range out {
		links = append(links, found{rs.task, linkRef{pos: rs.link, rec: j}})
	}
	for _, l := range links {
		tasks[l.task].links = append(tasks[l.task].links, l.link)
	}
	for i := range tasks {
		slices.SortFunc(tasks[i].links, func(a, b linkRef) int { return a.pos - b.pos })
	}
	return out, nil
}

// taskEntries reads task entries with pos > since, at most limit. A task
// with a linked session reads its assistant text from that session, so
// the runner's assistant_text events of such a task are left out.
func taskEntries(ctx context.Context, q streams.Querier, sessionID string, since int64, limit int, linked []string) ([]Entry, error) {
	rows, err := q.Query(ctx, `SELECT pos, task_id, seq, kind, text, data, at FROM desktop_task_events
		WHERE remote_session_id = $1 AND pos > $2 AND NOT (kind = 'assistant_text' AND task_id = ANY($4))
		ORDER BY pos LIMIT $3`, sessionID, since, limit, linked)
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
func sessionContent(ctx context.Context, q streams.Querier, rs *RecordedSession, since int64, limit int) ([]Entry, bool, error) {
	page, err := recorder.ReadChunks(ctx, q, rs.SessionID, since, limit)
	if err != nil {
		return nil, false, err
	}
	events, eventsMore, err := sessionEvents(ctx, q, rs, since, limit)
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

// beforeEvents, when a test sets it, runs between a session's chunks and
// its events are read: where a commit of the recorder's lands in a race.
var beforeEvents func()

// sessionEvents reads the steps a recorded session's event chunks became,
// with their results: kind "event", data {action, detail, result}.
func sessionEvents(ctx context.Context, q streams.Querier, rs *RecordedSession, since int64, limit int) ([]Entry, bool, error) {
	if beforeEvents != nil {
		beforeEvents()
	}
	rows, err := q.Query(ctx, `SELECT st.session_seq, st.action, st.detail, o.body, st.at FROM steps st
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

// Progress is a mark of how far the sessions linked to a remote session's
// tasks have come: Mark changes whenever one of them gets an envelope or
// starts or ends. A live page polls it, since those sessions are the
// recorder's, whose writes the desktop service does not hear of. Settled:
// the remote session and every linked session have ended, so nothing the
// recorder does changes the page until a task changes (a follow-up).
type Progress struct {
	Mark    string
	Settled bool
}

// progressSQL finds the links by desktop_task_sessions_remote and each
// session by its primary key.
const progressSQL = `SELECT count(*), count(s.ended_at), coalesce(sum(s.last_seq), 0),
	coalesce((SELECT state FROM remote_sessions WHERE id = $1 AND org = $2 AND member = $3), '')
	FROM desktop_task_sessions l LEFT JOIN sessions s ON s.id = l.session_id
	WHERE l.remote_session_id = $1 AND l.org = $2 AND l.member = $3`

// RecordedProgress reads the remote session's Progress.
func (s *Service) RecordedProgress(ctx context.Context, owner streams.Owner, sessionID string) (Progress, error) {
	var n, ended, seqs int64
	var state string
	if err := s.cfg.Pool.QueryRow(ctx, progressSQL, sessionID, owner.Org, owner.Member).Scan(&n, &ended, &seqs, &state); err != nil {
		return Progress{}, fmt.Errorf("progress of %s: %w", sessionID, err)
	}
	return Progress{Mark: fmt.Sprintf("%d:%d:%d", n, ended, seqs), Settled: Ended(state) && ended == n}, nil
}
