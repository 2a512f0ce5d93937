package views

import (
	"fmt"
	"strings"
	"time"

	"github.com/spinehq/spine/streams"
)

// SessionCursor is where a page of sessions ends: the last session's start
// and id. The next page lists the sessions before it in the page's order.
type SessionCursor struct {
	StartedAt time.Time
	ID        string
}

// String is the cursor as a link carries it: the start (RFC 3339, to the
// microsecond the database keeps) and the id, joined by "~" (which no id
// holds).
func (c SessionCursor) String() string {
	return c.StartedAt.UTC().Format(time.RFC3339Nano) + "~" + c.ID
}

// ParseSessionCursor reads a cursor String wrote.
func ParseSessionCursor(s string) (SessionCursor, error) {
	at, id, ok := strings.Cut(s, "~")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || !streams.ValidID(id) {
		return SessionCursor{}, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	return SessionCursor{StartedAt: t, ID: id}, nil
}
