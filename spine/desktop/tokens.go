package desktop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/auth"
	"github.com/spinehq/spine/streams"
)

// AudienceRunner is the audience of runner tokens: they open the runner
// routes and nothing else.
const AudienceRunner = "spine-runner"

// RunnerTokenTTL is a runner token's lifetime.
const RunnerTokenTTL = 12 * time.Hour

// RunnerToken is a minted runner credential. Token is shown once.
type RunnerToken struct {
	Token     string     `json:"token,omitempty"`
	TokenID   string     `json:"tokenId"`
	RunnerID  string     `json:"runnerId"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt time.Time  `json:"expiresAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// MintRunnerToken mints a 12-hour runner token for one of owner's machines.
// Only a member's own first-party route calls this; MCP never does.
func (s *Service) MintRunnerToken(ctx context.Context, owner Owner, runnerID string) (*RunnerToken, error) {
	if !streams.ValidID(runnerID) {
		return nil, invalid("runnerId is required: the machine's persisted id (letters, digits, - and _; at most 128)")
	}
	r, err := s.runner(ctx, owner, runnerID)
	if err != nil && !errors.Is(err, ErrUnknownRunner) {
		return nil, err
	}
	if r == nil {
		if taken, err := s.runnerTaken(ctx, runnerID); err != nil || taken {
			return nil, cmpErr(err, invalid("runnerId is in use by another member"))
		}
	}
	tok, err := s.cfg.Signer.Mint(auth.Claims{Org: owner.Org, Member: owner.Member, Audience: AudienceRunner}, RunnerTokenTTL)
	if err != nil {
		return nil, err
	}
	c, err := s.cfg.Signer.Verify(tok, AudienceRunner, time.Now())
	if err != nil {
		return nil, fmt.Errorf("read back minted token: %w", err)
	}
	_, err = s.cfg.Pool.Exec(ctx, `INSERT INTO runner_tokens (id, org, member, runner_id, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, c.ID, owner.Org, owner.Member, runnerID, c.IssuedAt, c.ExpiresAt)
	if err != nil {
		return nil, fmt.Errorf("record runner token: %w", err)
	}
	return &RunnerToken{Token: tok, TokenID: c.ID, RunnerID: runnerID, CreatedAt: c.IssuedAt, ExpiresAt: c.ExpiresAt}, nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

func (s *Service) runnerTaken(ctx context.Context, runnerID string) (bool, error) {
	var n int
	err := s.cfg.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM desktop_runners WHERE id = $1) +
		(SELECT count(*) FROM runner_tokens WHERE runner_id = $1)`, runnerID).Scan(&n)
	return n > 0, err
}

// VerifyRunner checks a runner token: signature, audience, lifetime, and
// that its member has not revoked it.
func (s *Service) VerifyRunner(ctx context.Context, token string) (RunnerIdentity, error) {
	c, err := s.cfg.Signer.Verify(token, AudienceRunner, s.now())
	if err != nil {
		return RunnerIdentity{}, err
	}
	var runnerID string
	var revoked *time.Time
	err = s.cfg.Pool.QueryRow(ctx, `SELECT runner_id, revoked_at FROM runner_tokens WHERE id = $1 AND org = $2 AND member = $3`,
		c.ID, c.Org, c.Member).Scan(&runnerID, &revoked)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && revoked != nil) {
		return RunnerIdentity{}, ErrTokenRevoked
	}
	if err != nil {
		return RunnerIdentity{}, fmt.Errorf("check runner token: %w", err)
	}
	return RunnerIdentity{Org: c.Org, Member: c.Member, RunnerID: runnerID, TokenID: c.ID}, nil
}

// RunnerTokens lists owner's runner tokens (never the token strings).
func (s *Service) RunnerTokens(ctx context.Context, owner Owner) ([]RunnerToken, error) {
	rows, err := s.cfg.Pool.Query(ctx, `SELECT id, runner_id, created_at, expires_at, revoked_at FROM runner_tokens
		WHERE org = $1 AND member = $2 ORDER BY created_at DESC, id LIMIT 200`, owner.Org, owner.Member)
	if err != nil {
		return nil, fmt.Errorf("list runner tokens: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RunnerToken, error) {
		var t RunnerToken
		err := r.Scan(&t.TokenID, &t.RunnerID, &t.CreatedAt, &t.ExpiresAt, &t.RevokedAt)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("list runner tokens: %w", err)
	}
	if out == nil {
		out = []RunnerToken{}
	}
	return out, nil
}

// ErrUnknownToken: no such runner token of this member.
var ErrUnknownToken = errors.New("unknown_token")

// RevokeRunnerToken revokes one of owner's runner tokens at once.
func (s *Service) RevokeRunnerToken(ctx context.Context, owner Owner, tokenID string) error {
	tag, err := s.cfg.Pool.Exec(ctx, `UPDATE runner_tokens SET revoked_at = coalesce(revoked_at, $4)
		WHERE id = $1 AND org = $2 AND member = $3`, tokenID, owner.Org, owner.Member, s.now())
	if err != nil {
		return fmt.Errorf("revoke runner token: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrUnknownToken
	}
	return nil
}
