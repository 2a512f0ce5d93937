package desktop

import (
	"strconv"
	"strings"
	"time"

	"github.com/spinehq/spine/streams"
)

// SessionCursor is where a page of remote sessions starts: after this
// session in the list's order (last activity, newest first). Its text
// form is "MICROS:ID", the last activity in microseconds since the epoch
// (what PostgreSQL keeps of it) and the session's id.
type SessionCursor struct {
	At time.Time
	ID string
}

// NextSessions is the cursor after the last of a page.
func NextSessions(last Session) SessionCursor {
	return SessionCursor{At: last.LastActivityAt, ID: last.ID}
}

func (c SessionCursor) String() string {
	return strconv.FormatInt(c.At.UnixMicro(), 10) + ":" + c.ID
}

var errBadSessionCursor = invalid("after must be a page's next (MICROS:ID)")

// ParseSessionCursor reads "MICROS:ID"; "" is the start.
func ParseSessionCursor(s string) (SessionCursor, error) {
	if s == "" {
		return SessionCursor{}, nil
	}
	micros, id, ok := strings.Cut(s, ":")
	n, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || !streams.ValidID(id) {
		return SessionCursor{}, errBadSessionCursor
	}
	return SessionCursor{At: time.UnixMicro(n).UTC(), ID: id}, nil
}
