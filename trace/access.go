package trace

import (
	"context"
	"fmt"

	"github.com/spinehq/spine/streams"
)

// CanRead reports whether the owner may read a file: they uploaded it, or
// one of their sessions sent its bytes (a write or read with inline content,
// an end artifact with content, a transcript, a prompt). Naming a digest by
// reference (contentDigest + size) grants nothing: anyone can name one.
func CanRead(ctx context.Context, q streams.Querier, owner streams.Owner, digest string) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM artifacts WHERE digest = $1 AND org = $2 AND member = $3
			AND NOT by_reference AND NOT content_omitted)
		OR EXISTS (SELECT 1 FROM steps st JOIN runs r ON r.id = st.run_id
			WHERE st.detail->>'contentDigest' = $1 AND st.detail ? 'contentDigest' AND r.org = $2 AND r.member = $3
			AND NOT st.detail ? 'contentPushed' AND NOT st.detail ? 'contentOmitted')
		OR EXISTS (SELECT 1 FROM sessions WHERE prompt_digest = $1 AND org = $2 AND member = $3)`,
		digest, owner.Org, owner.Member).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("access to %s: %w", digest, err)
	}
	return ok, nil
}

// FileName is the name the owner's earliest named artifact of the digest
// gives it (a file step's path, an upload's name), "" when none names it:
// what a page offers the file's download as.
func FileName(ctx context.Context, q streams.Querier, owner streams.Owner, digest string) (string, error) {
	var name string
	err := q.QueryRow(ctx, `SELECT coalesce((SELECT name FROM artifacts WHERE digest = $1 AND org = $2 AND member = $3
		AND name <> '' ORDER BY created_at, id LIMIT 1), '')`, digest, owner.Org, owner.Member).Scan(&name)
	if err != nil {
		return "", fmt.Errorf("name of %s: %w", digest, err)
	}
	return name, nil
}
