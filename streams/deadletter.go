package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/secrets"
)

// DeadLetterOwner is who may read a message's dead letter: the verified
// caller when the message came through HTTP ingest (its headers), else the
// owner of the session the handler found it was for (rej.Owner), else the
// owner the message names itself (a session.start's or an upload's owner,
// a budget's or desktop message's org and member), else nobody. Each comes
// from the log alone, so a rebuild attributes every dead letter the same.
// The caller comes first: what one tenant sends about another's session
// is shown to the sender, never written into the other's list.
func DeadLetterOwner(m Message, rej *Rejection) Owner {
	if org := m.Header.Get(HeaderOrg); org != "" {
		return Owner{Org: org, Member: m.Header.Get(HeaderMember)}
	}
	if rej != nil && rej.Owner.Org != "" {
		return rej.Owner
	}
	return namedOwner(m.Data)
}

// namedOwner is the owner a message's own JSON names, if it is well formed.
func namedOwner(data []byte) Owner {
	var probe struct {
		Owner  *Owner `json:"owner"`
		Org    string `json:"org"`
		Member string `json:"member"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return Owner{}
	}
	o := Owner{Org: probe.Org, Member: probe.Member}
	if probe.Owner != nil {
		o = *probe.Owner
	}
	if !ValidOwnerID(o.Org) || !ValidOwnerID(o.Member) {
		return Owner{}
	}
	return o
}

// DeadLetter is one refused message as its owner reads it.
type DeadLetter struct {
	Stream    string    `json:"stream"`
	Seq       uint64    `json:"seq"`
	Subject   string    `json:"subject"`
	Reason    string    `json:"reason"`
	Detail    string    `json:"detail"`
	Type      string    `json:"type"`      // the message's own type, "" when unreadable
	ID        string    `json:"id"`        // the message's own id, "" when unreadable
	SessionID string    `json:"sessionId"` // "" when it names none
	Org       string    `json:"org"`
	Member    string    `json:"member"`
	At        time.Time `json:"at"` // when the log stored the message
	// Message is the message as stored (redacted), on a read of one dead
	// letter: JSON when it was JSON, else a string of its bytes.
	Message json.RawMessage `json:"message,omitempty"`
}

// DeadLetterScope is whose dead letters a read sees: one member's, or with
// WholeOrg every member's of the org (an org admin's read).
type DeadLetterScope struct {
	Owner
	WholeOrg bool
}

// DeadLetterCursor is where a page of dead letters starts: after this
// stream and sequence, in (stream, seq) order. Its text form is
// "STREAM:SEQ".
type DeadLetterCursor struct {
	Stream string
	Seq    uint64
}

func (c DeadLetterCursor) String() string { return c.Stream + ":" + strconv.FormatUint(c.Seq, 10) }

// ParseDeadLetterCursor reads "STREAM:SEQ"; "" is the start.
func ParseDeadLetterCursor(s string) (DeadLetterCursor, error) {
	if s == "" {
		return DeadLetterCursor{}, nil
	}
	stream, seq, ok := strings.Cut(s, ":")
	n, err := strconv.ParseUint(seq, 10, 63)
	if !ok || err != nil || !ValidID(stream) {
		return DeadLetterCursor{}, fmt.Errorf("%w: want STREAM:SEQ", ErrBadCursor)
	}
	return DeadLetterCursor{Stream: stream, Seq: n}, nil
}

const deadLetterColumns = `stream, seq, subject, reason, detail, coalesce(dead_letter_field(data, 'type'), ''),
	coalesce(dead_letter_field(data, 'id'), ''), coalesce(dead_letter_field(data, 'sessionId'), ''), org, member, at`

// deadLetterWhere limits a read to the scope: $1 the org, $2 the member,
// $3 whether the whole org is in scope. A dead letter no one owns (empty org)
// is in no one's scope.
const deadLetterWhere = `org = $1 AND org <> '' AND ($3 OR member = $2)`

// ListDeadLetters returns up to limit of the scope's dead letters after the
// cursor, in (stream, seq) order.
func ListDeadLetters(ctx context.Context, q Querier, scope DeadLetterScope, after DeadLetterCursor, limit int) ([]DeadLetter, error) {
	rows, err := q.Query(ctx, `SELECT `+deadLetterColumns+` FROM dead_letters
		WHERE `+deadLetterWhere+` AND (stream, seq) > ($4, $5) ORDER BY stream, seq LIMIT $6`,
		scope.Org, scope.Member, scope.WholeOrg, after.Stream, int64(after.Seq), limit)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadLetter, error) {
		var d DeadLetter
		return d, r.Scan(d.targets()...)
	})
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return out, nil
}

// GetDeadLetter returns one of the scope's dead letters with its message.
// One outside the scope is ErrNotFound, as one that does not exist.
func GetDeadLetter(ctx context.Context, q Querier, scope DeadLetterScope, stream string, seq uint64) (*DeadLetter, error) {
	var d DeadLetter
	var data []byte
	err := q.QueryRow(ctx, `SELECT `+deadLetterColumns+`, data FROM dead_letters
		WHERE `+deadLetterWhere+` AND stream = $4 AND seq = $5`,
		scope.Org, scope.Member, scope.WholeOrg, stream, int64(seq)).Scan(append(d.targets(), &data)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get dead letter %s:%d: %w", stream, seq, err)
	}
	d.Message = messageJSON(data)
	return &d, nil
}

func (d *DeadLetter) targets() []any {
	return []any{&d.Stream, &d.Seq, &d.Subject, &d.Reason, &d.Detail, &d.Type, &d.ID, &d.SessionID,
		&d.Org, &d.Member, &d.At}
}

// messageJSON is data itself when it is JSON, else data as a JSON string
// (invalid UTF-8 replaced), so the answer is always valid JSON.
func messageJSON(data []byte) json.RawMessage {
	if json.Valid(data) {
		return data
	}
	s, _ := json.Marshal(strings.ToValidUTF8(string(data), "\uFFFD"))
	return s
}

// deadLetter records each rejected message in the dead_letters table (in
// the batch's transaction) and on the DLQ stream (idempotently, by id,
// before the commit so a crash cannot lose it).
func (p *Projector) deadLetter(ctx context.Context, tx pgx.Tx, msgs []Message, results []error) error {
	if len(results) != len(msgs) {
		return fmt.Errorf("handler returned %d results for %d messages", len(results), len(msgs))
	}
	for i, res := range results {
		if res == nil {
			continue
		}
		rej, ok := AsRejection(res)
		if !ok {
			rej = Reject(ReasonHandlerError, "%v", res)
		} else if !ValidID(rej.Reason) {
			// The reason becomes a DLQ subject token: one that cannot be
			// published would block the stream behind this message forever.
			rej = Reject(ReasonHandlerError, "reason %q: %s", rej.Reason, rej.Detail)
		}
		if err := p.deadLetterOne(ctx, tx, msgs[i], rej); err != nil {
			return err
		}
	}
	return nil
}

// DLQMaxBytes bounds the copy of a message the DLQ stream gets; the
// dead_letters row keeps the whole (redacted) message. Redaction can make a
// message longer than the log let in ([REDACTED] is longer than a short
// secret), and a copy over the server's max_payload would be refused on
// every try: 256 KiB is under NATS's default max_payload (1 MiB) with room
// for the headers. A truncated copy says so in Spine-Truncated.
const DLQMaxBytes = 256 << 10

// HeaderTruncated, on a DLQ message, is the length in bytes of the
// message it is the first DLQMaxBytes of.
const HeaderTruncated = "Spine-Truncated"

func (p *Projector) deadLetterOne(ctx context.Context, tx pgx.Tx, m Message, rej *Rejection) error {
	redact := p.cfg.Redact
	if redact == nil {
		redact = secrets.Bytes
	}
	data := redact(m.Data)
	rej = &Rejection{Reason: rej.Reason, Detail: secrets.String(rej.Detail), Owner: rej.Owner}
	if err := p.publishDeadLetter(ctx, m, rej, data); err != nil {
		return err
	}
	return p.recordDeadLetter(ctx, tx, m, rej, data)
}

// deadLetterBare records a dead letter without the message: the reason and
// the detail, on the DLQ stream and in dead_letters.
func (p *Projector) deadLetterBare(ctx context.Context, tx pgx.Tx, m Message, rej *Rejection) error {
	rej = &Rejection{Reason: rej.Reason, Detail: secrets.String(rej.Detail), Owner: rej.Owner}
	if err := p.publishDeadLetter(ctx, m, rej, nil); err != nil {
		return err
	}
	return p.recordDeadLetter(ctx, tx, m, rej, []byte{})
}

// publishDeadLetter puts the dead letter on the DLQ stream, its message cut
// to what the server takes (dlqLimit).
func (p *Projector) publishDeadLetter(ctx context.Context, m Message, rej *Rejection, data []byte) error {
	msg := nats.NewMsg(DLQSubject(p.cfg.Stream, rej.Reason))
	msg.Data = data
	if limit := p.dlqLimit(); len(data) > limit {
		msg.Data = data[:limit]
		msg.Header.Set(HeaderTruncated, strconv.Itoa(len(data)))
	}
	msg.Header.Set(jetstream.MsgIDHeader, "dlq-"+p.cfg.Stream+"-"+strconv.FormatUint(m.Seq, 10))
	msg.Header.Set("Spine-Reason", rej.Reason)
	msg.Header.Set("Spine-Detail", headerSafe(rej.Detail))
	msg.Header.Set("Spine-Stream", p.cfg.Stream)
	msg.Header.Set("Spine-Seq", strconv.FormatUint(m.Seq, 10))
	msg.Header.Set("Spine-Subject", m.Subject)
	_, err := p.cfg.JS.PublishMsg(ctx, msg)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum):
		// The same copy is refused on every try: isolation writes a dead
		// letter without the message instead (isolateOne).
		return fmt.Errorf("publish dead letter %d: %w", m.Seq, err)
	default:
		// The log's failure, not the message's: retry, never isolate.
		return Transient(fmt.Errorf("publish dead letter %d: %w", m.Seq, err))
	}
}

// dlqLimit is DLQMaxBytes, less on a server whose max_payload is smaller,
// leaving 8 KiB for the headers (a bounded detail and five short values).
func (p *Projector) dlqLimit() int {
	limit := DLQMaxBytes
	if nc := p.cfg.JS.Conn(); nc != nil && nc.MaxPayload() > 0 {
		limit = min(limit, max(int(nc.MaxPayload())-8<<10, 0))
	}
	return limit
}

func (p *Projector) recordDeadLetter(ctx context.Context, tx pgx.Tx, m Message, rej *Rejection, data []byte) error {
	who := DeadLetterOwner(m, rej)
	_, err := tx.Exec(ctx, `INSERT INTO dead_letters (stream, seq, subject, reason, detail, data, at, org, member)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
		p.cfg.Stream, int64(m.Seq), m.Subject, rej.Reason, escapeDetail(rej.Detail), data, m.Time,
		who.Org, who.Member)
	if err != nil {
		return fmt.Errorf("record dead letter %d: %w", m.Seq, err)
	}
	p.m.deadLetters.WithLabelValues(p.cfg.Name, rej.Reason).Inc()
	p.log.Info("dead letter", "seq", m.Seq, "reason", rej.Reason)
	return nil
}

// escapeDetail makes a detail storable as text: valid UTF-8 without NUL.
func escapeDetail(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// headerSafe makes a value fit a NATS header: one line, bounded.
func headerSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == 0 {
			return ' '
		}
		return r
	}, s)
	if len(s) > 1024 {
		s = s[:1024]
	}
	return s
}
