package views

import (
	"context"
	"fmt"

	"github.com/spinehq/spine/streams"
)

// SessionsMark is a digest of what the owner's sessions page shows that
// can change: each running session's id and recorded steps (a start, a
// step or an end changes it), and the newest page's sessions with their
// status, recorded steps, billing class and end (a session that started
// and ended between two looks, an imported one among the newest, a
// router-call row landing after its end). Not a session's chunks: the list
// shows none of them, and a running session's every stdout chunk would
// make every open list fetch its rows again. The page's event stream polls
// it and says "change" when it moves. Bounded: at most MaxRunningCount+1
// running sessions, from the index of running ones, and SessionsPageSize
// newest from the owner's index by start. A filtered page whose sessions
// are all older than the newest page's and ended is not watched: nothing in
// it changes but an import.
func SessionsMark(ctx context.Context, q streams.Querier, owner streams.Owner) (string, error) {
	w := sessionsWhere(owner, SessionFilter{})
	sql := fmt.Sprintf(`SELECT md5(
		coalesce((SELECT string_agg(id || ':' || recorded_steps, ',' ORDER BY started_at DESC, id COLLATE "C" DESC)
			FROM (SELECT s.id, s.recorded_steps, s.started_at FROM sessions s WHERE %s
				ORDER BY s.started_at DESC, s.id COLLATE "C" DESC LIMIT %d) running), '') || '|' ||
		coalesce((SELECT string_agg(n.id || ':' || n.status || ':' || n.recorded_steps || ':' || coalesce(rc.billing, '') ||
				':' || coalesce(n.ended_at::text, ''), ',' ORDER BY n.started_at DESC, n.id COLLATE "C" DESC)
			FROM (SELECT s.id, s.org, s.status, s.recorded_steps, s.ended_at, s.started_at FROM sessions s WHERE %s
				ORDER BY s.started_at DESC, s.id COLLATE "C" DESC LIMIT %d) n
			LEFT JOIN router_calls rc ON rc.session_id = n.id AND rc.org = n.org), ''))`,
		w.and("s.ended_at IS NULL"), MaxRunningCount+1, w.and(""), SessionsPageSize)
	var mark string
	if err := q.QueryRow(ctx, sql, w.args...).Scan(&mark); err != nil {
		return "", fmt.Errorf("read sessions mark: %w", err)
	}
	return mark, nil
}
