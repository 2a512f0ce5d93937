package apps

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spinehq/spine/streams"
)

// A continuation is what an app session gains after the spine session it
// was recorded as has ended: `claude --resume` appending to its
// transcript, `codex exec resume` to its rollout, a new `claude -p
// --resume` process, or more lines after the collector ended the session
// as idle (Translator.EndQuiet). It is recorded as a new spine session with
// the same appSessionRef, never lost (the ended session takes no more) and
// never counted twice (its end carries only what was used past the ended
// sessions' ends).
//
// Its id is derived from the app session id and where it starts: after
// which of the translation's chunks (the ended sessions held that many),
// see ContinuationID. The translation numbers an app session's chunks the
// same way however often it is read (spine import again, the collector
// after a restart), so a re-read finds the same sessions: chunks up to
// the last ended session's are passed over, the rest are the
// continuation's, numbered from 1 in it.
//
// recording is the spine session a translated app session is written to
// now: its own (SessionID) until that has ended, then a continuation.
type recording struct {
	id    string
	after int64 // the translation's chunks up to this seq went to the sessions before
	k     int   // continuations before it that started at the same seq
	// started: its start is published, or spine had it.
	started bool
	// resumeAfter is the translation's seq up to which spine had its
	// chunks (started, not ended).
	resumeAfter int64
	// prior are the usage and cost the sessions before it recorded, in
	// the translation's totals: its end carries what is past them.
	prior     streams.Usage
	priorCost float64
}

// ContinuationID is the spine id of the continuation of an app session
// that starts after the translation's chunk after; k counts the earlier
// continuations that started after the same chunk (one that recorded only
// usage, no chunk). The same inputs always give the same id:
// "<SessionID>-c<after>" (with "-<k>" when k > 0), the session id cut and
// hashed to fit when it is long.
func ContinuationID(app, appSessionID string, after int64, k int) string {
	suffix := "-c" + strconv.FormatInt(after, 10)
	if k > 0 {
		suffix += "-" + strconv.Itoa(k)
	}
	base := SessionID(app, appSessionID)
	if len(base)+len(suffix) <= streams.MaxIDLen {
		return base + suffix
	}
	return base[:streams.MaxIDLen-len(suffix)-17] + "-" + hash(app, appSessionID, "continuation")[:16] + suffix
}

// maxChain bounds the ended sessions followed to find where an app
// session is recorded now.
const maxChain = 10000

// resolve asks spine, once, where the app session is recorded now: its
// own session, or, past every ended one, the continuation after them.
// With Options.NewOutput the records to come are new output: the
// translation's numbering goes on after what spine holds, and a session
// started but not ended is passed over too.
func (s *session) resolve(ctx context.Context) error {
	if s.started {
		return nil
	}
	s.started = true
	s.rec = recording{id: s.id}
	subtract := s.priorCounts()
	for i := 0; ; i++ {
		r, err := s.tr.opts.Sink.Recorded(ctx, s.rec.id)
		if err != nil {
			return err
		}
		if s.tr.opts.LeaveRun && r.Kind == "run" {
			s.left = true
		}
		// New output never goes into a session another process holds open
		// (a killed spine run whose end is still in its spool, a collector
		// recording it): that process's end would cross this one's, under
		// one id. It is passed over as an ended one is, its usage so far
		// subtracted where the totals include it.
		held := r.Started && !r.Ended && s.tr.opts.NewOutput
		if !r.Ended && !held {
			s.rec.started = r.Started
			if r.Started {
				s.rec.resumeAfter = s.rec.after + r.LastSeq
			}
			break
		}
		if i == 0 {
			s.baseEnded = true
		}
		if i >= maxChain {
			return fmt.Errorf("session %s: more than %d continuations recorded", s.id, maxChain)
		}
		if subtract {
			if r.Usage != nil {
				s.rec.prior.Add(*r.Usage)
			}
			if r.Cost != nil {
				s.rec.priorCost += *r.Cost
			}
		}
		s.next(s.rec.after + r.LastSeq)
	}
	if s.rec.started || s.baseEnded {
		s.pre = nil // spine has the start that carried them
	}
	if s.tr.opts.NewOutput {
		s.seq = max(s.seq, s.rec.after, s.rec.resumeAfter)
	}
	return nil
}

// priorCounts reports whether the translation's totals include what the
// ended sessions recorded: they do when the output is read again from its
// start, and for Codex, whose reports are the thread's running total
// across runs; a new Claude process's output (NewOutput) reports its own.
func (s *session) priorCounts() bool {
	return !s.tr.opts.NewOutput || s.app() == "codex"
}

// next makes the continuation after the translation's chunk after the
// session written to, the ones before it ended.
func (s *session) next(after int64) {
	k := 0
	if after == s.rec.after && s.rec.id != s.id {
		k = s.rec.k + 1 // the continuation before ended with no chunk
	}
	s.rec = recording{id: ContinuationID(s.app(), s.appID, after, k), after: after, k: k,
		prior: s.rec.prior, priorCost: s.rec.priorCost}
}

// open publishes the start of the session written to, unless spine has
// it. A continuation starts at the time of what opened it, kind and
// appSessionRef as the session's own; the prompt was the first one's.
func (s *session) open(ctx context.Context, at time.Time) error {
	if s.rec.started {
		return nil
	}
	if err := s.leaveRun(ctx); err != nil {
		return err
	}
	s.rec.started = true
	pre := s.pre
	s.pre = nil // published: nothing keeps them
	if pre == nil {
		pre = &preStart{}
	}
	owner, kind := s.tr.opts.Owner, "open"
	if s.run {
		kind = "run"
	}
	e := &streams.Envelope{V: streams.Version, Type: streams.TypeSessionStart,
		ID: envelopeID(s.app(), s.rec.id, "start", 0), At: s.startTime(), SessionID: s.rec.id, App: s.app(), Kind: kind,
		AppSessionRef: s.appID, Workspace: cmpOr(pre.workspace, s.workspace), Owner: &owner, Prompt: pre.prompt}
	if s.rec.id != s.id {
		e.At = at.UTC()
		if e.At.IsZero() || at.Before(s.startTime()) {
			e.At = s.endTime()
		}
	}
	return s.tr.publish(ctx, s, e)
}

// leaveRun asks spine, just before a start would be published, whether
// another producer records the app session now (Options.LeaveRun): its
// own session or the one to start is kind run. It closes the window in
// which spine run began the session after resolve asked.
func (s *session) leaveRun(ctx context.Context) error {
	if !s.tr.opts.LeaveRun || s.left {
		return nil
	}
	for _, id := range []string{s.id, s.rec.id} {
		r, err := s.tr.opts.Sink.Recorded(ctx, id)
		if err != nil {
			return err
		}
		if r.Kind == "run" {
			s.left = true
			return nil
		}
		if s.rec.id == s.id {
			break
		}
	}
	return nil
}

// since is what the session used past the ended sessions' ends: its total
// less theirs (a count never below 0), and its cost less theirs (nil when
// the app reported none).
func (s *session) since() (streams.Usage, *float64) {
	u := s.total()
	p := s.rec.prior
	u.InputTokens = max(0, u.InputTokens-p.InputTokens)
	u.OutputTokens = max(0, u.OutputTokens-p.OutputTokens)
	u.CacheReadTokens = max(0, u.CacheReadTokens-p.CacheReadTokens)
	u.CacheWriteTokens = max(0, u.CacheWriteTokens-p.CacheWriteTokens)
	u.ReasoningTokens = max(0, u.ReasoningTokens-p.ReasoningTokens)
	if s.cost == nil {
		return u, nil
	}
	c := max(0, *s.cost-s.rec.priorCost)
	return u, &c
}

// hasNew reports whether a continuation not yet started has anything to
// record: usage or cost past the ended sessions'.
func (s *session) hasNew() bool {
	u, c := s.since()
	return !u.SameCounts(streams.Usage{}) || c != nil && *c > 0
}

// end publishes the end of the session written to: usage and cost past
// the ended sessions'. A continuation with nothing in it is not recorded.
func (s *session) end(ctx context.Context) (bool, error) {
	if !s.rec.started {
		if s.rec.id != s.id && !s.hasNew() {
			return false, nil
		}
		if err := s.open(ctx, s.endTime()); err != nil {
			return false, err
		}
	}
	u, cost := s.since()
	e := &streams.Envelope{V: streams.Version, Type: streams.TypeSessionEnd, ID: envelopeID(s.app(), s.rec.id, "end", 0),
		At: s.endTime(), SessionID: s.rec.id, Status: cmpOr(s.status, "done"), ExitCode: s.exitCode, Error: s.err,
		Model: s.model, Effort: s.effort, TotalCost: cost,
		Billing: cmpOr(s.tr.opts.Billing, s.billing)}
	if s.reported() {
		u.Raw = s.rawJSON()
		e.Usage = &u
	}
	return true, s.tr.publish(ctx, s, e)
}

// pause ends the spine session written to now, for a session gone quiet
// (Translator.EndQuiet), and makes its next records a continuation. Calls
// still waiting stay waiting: their results may come, and the chunks of a
// re-read must be numbered as these were.
func (s *session) pause(ctx context.Context) error {
	if err := s.resolve(ctx); err != nil {
		return err
	}
	if !s.rec.started && (s.rec.id != s.id || !s.begun) && !s.hasNew() {
		return nil // nothing since the last end
	}
	if _, err := s.end(ctx); err != nil {
		return err
	}
	u, cost := s.since()
	s.rec.prior.Add(u)
	if cost != nil {
		s.rec.priorCost += *cost
	}
	s.next(s.seq)
	return nil
}

// EndQuiet ends, for every app session whose sources quiet says have had
// nothing new for long enough, the spine session it is written to, with
// its usage so far (so its router-call row exists), and returns the ids of
// the sessions it ended. The app session stays in the translation: what it
// gains later is recorded as a continuation. quiet is given the session's
// sources, in the order read.
func (tr *Translator) EndQuiet(ctx context.Context, quiet func(files []string) bool) ([]string, error) {
	var ended []string
	for _, s := range tr.order {
		if !s.mayEnd() || !quiet(s.files) {
			continue
		}
		id := s.rec.id
		was := s.published
		s.published = false
		if err := s.pause(ctx); err != nil {
			return ended, err
		}
		if s.published {
			ended = append(ended, id)
		}
		s.published = s.published || was
	}
	return ended, nil
}

// Quiet returns the ids of the spine sessions EndQuiet would end now with
// the same quiet, publishing nothing, so a caller can note them before it
// does (a session spine was not asked about yet goes by its own id, though
// its end may go to a continuation).
func (tr *Translator) Quiet(quiet func(files []string) bool) []string {
	var ids []string
	for _, s := range tr.order {
		if s.mayEnd() && quiet(s.files) {
			ids = append(ids, cmpOr(s.rec.id, s.id))
		}
	}
	return ids
}

// mayEnd reports whether EndQuiet has anything to end of s: it is open,
// recorded here, and has something since its last end.
func (s *session) mayEnd() bool {
	return s != nil && !s.left && s.begun && (!s.started || s.rec.started || s.hasNew())
}

// running publishes the usage so far of the session written to, when a
// record changed it since the last one published (Options.Live): a
// session.usage, which the recorder keeps on the session row until the
// end replaces it, so a live cost view needs no end. Only a started
// session's, and like the end only what came past the ended sessions'.
// Its id is the usage's place: the same usage after the same chunk is the
// same envelope, so a collector reading a file again sends nothing new.
func (s *session) running(ctx context.Context) error {
	if !s.rec.started || !s.reported() {
		return nil
	}
	u, cost := s.since()
	prev := shownUsage{id: s.rec.id} // a session starts from nothing used
	if s.shown != nil && s.shown.id == s.rec.id {
		prev = *s.shown
	}
	if u.SameCounts(prev.usage) && (sameCost(cost, prev.cost) || prev.cost == nil && *cost == 0) {
		return nil
	}
	s.shown = &shownUsage{id: s.rec.id, usage: u, cost: cost}
	kind := fmt.Sprintf("usage:%d:%d:%d:%d:%d", u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens)
	if cost != nil {
		kind += ":" + strconv.FormatFloat(*cost, 'g', -1, 64)
	}
	return s.tr.publish(ctx, s, &streams.Envelope{V: streams.Version, Type: streams.TypeSessionUsage,
		ID: envelopeID(s.app(), s.rec.id, kind, s.seq-s.rec.after), At: s.endTime(), SessionID: s.rec.id,
		Usage: &u, TotalCost: cost})
}

// PublishUsage publishes, for every session a record may have changed the
// usage of since the last call (Options.UsageByPass), its usage so far:
// one session.usage at most, and none when it is unchanged. skip, when
// set, leaves out the sessions whose sources it names (a collector's files
// already quiet for long enough, about to be ended with that usage).
func (tr *Translator) PublishUsage(ctx context.Context, skip func(files []string) bool) error {
	for _, s := range tr.order {
		if s == nil || !s.usageDue {
			continue
		}
		s.usageDue = false
		if s.left || skip != nil && skip(s.files) {
			continue
		}
		if err := s.running(ctx); err != nil {
			return err
		}
	}
	return nil
}

// shownUsage is the running usage published last.
type shownUsage struct {
	id    string // of the spine session it was published for
	usage streams.Usage
	cost  *float64
}

func sameCost(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// Recheck asks spine again where each open app session is recorded, for
// a caller that may have been away longer than spine waits for a session
// (a collector on a laptop that slept past the server's idle timeout): a
// session spine ended meanwhile — the idle sweeper's end keeps the usage
// it last heard — takes no more; what comes next is its continuation, its
// usage past what that session recorded.
func (tr *Translator) Recheck(ctx context.Context) error {
	for _, s := range tr.order {
		if s == nil || s.left || !s.started || !s.rec.started {
			continue
		}
		r, err := tr.opts.Sink.Recorded(ctx, s.rec.id)
		if err != nil {
			return err
		}
		if !r.Ended {
			continue
		}
		if r.Usage != nil {
			s.rec.prior.Add(*r.Usage)
		}
		if r.Cost != nil {
			s.rec.priorCost += *r.Cost
		}
		s.next(s.rec.after + r.LastSeq)
	}
	return nil
}

// Absorb takes the usage read so far of every app session whose spine
// sessions have all ended as theirs: for a caller that has read again
// records whose envelopes spine already holds (the collector's start-up
// replay up to its saved offsets). Those records' usage was counted where
// they were first read; a response they share with a file no longer read
// (the parent of a --fork-session child, deleted since) would otherwise
// count again in a continuation. Usage read after it is new.
func (tr *Translator) Absorb() {
	for _, s := range tr.order {
		if s == nil || !s.started || s.rec.started {
			continue // not asked yet, or written to a running session: its end counts it
		}
		u, p := s.total(), &s.rec.prior
		p.InputTokens, p.OutputTokens = max(p.InputTokens, u.InputTokens), max(p.OutputTokens, u.OutputTokens)
		p.CacheReadTokens, p.CacheWriteTokens = max(p.CacheReadTokens, u.CacheReadTokens), max(p.CacheWriteTokens, u.CacheWriteTokens)
		p.ReasoningTokens = max(p.ReasoningTokens, u.ReasoningTokens)
		if s.cost != nil {
			s.rec.priorCost = max(s.rec.priorCost, *s.cost)
		}
	}
}
