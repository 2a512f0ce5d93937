package desktop

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// RemoteSessionOfTask is the remote session one of owner's tasks belongs
// to, "" when owner has no such task: what a recorded session's page links
// to when a runner recorded the session for a task (its start's taskId).
func RemoteSessionOfTask(ctx context.Context, q streams.Querier, owner streams.Owner, taskID string) (string, error) {
	if taskID == "" {
		return "", nil
	}
	var id string
	err := q.QueryRow(ctx, `SELECT remote_session_id FROM desktop_tasks WHERE id = $1 AND org = $2 AND member = $3`,
		taskID, owner.Org, owner.Member).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("remote session of task %s: %w", taskID, err)
	}
	return id, nil
}
