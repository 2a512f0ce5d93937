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
func (s *Service) MintRunnerToken(ctx context.Context, owner streams.Owner, runnerID string) (*RunnerToken, error) {
	if !streams.ValidID(runnerID) {
		return nil, invalid("runnerId is required: the machine's persisted id (letters, digits, - and _; at most 128)")
	}
	tok, err := s.cfg.Signer.Mint(auth.Claims{Org: owner.Org, Member: owner.Member, Audience: AudienceRunner}, RunnerTokenTTL)
	if err != nil {
		return nil, err
	}
	c, err := s.cfg.Signer.Verify(tok, AudienceRunner, time.Now())
	if err != nil {
		return nil, fmt.Errorf("read back minted token: %w", err)
	}
	if err := s.recordToken(ctx, owner, runnerID, c); err != nil {
		return nil, err
	}
	return &RunnerToken{Token: tok, TokenID: c.ID, RunnerID: runnerID, CreatedAt: c.IssuedAt, ExpiresAt: c.ExpiresAt}, nil
}

// recordToken claims runnerID for owner (the first member to mint for an
// id owns it; runner_owners' primary key settles a race) and records the
// token, in one transaction. Another member's id is ErrRunnerTaken.
func (s *Service) recordToken(ctx context.Context, owner streams.Owner, runnerID string, c auth.Claims) error {
	return pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		// Two statements: the read must see an owner another transaction
		// committed while the insert waited for it.
		_, err := tx.Exec(ctx, `INSERT INTO runner_owners (runner_id, org, member, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (runner_id) DO NOTHING`, runnerID, owner.Org, owner.Member, c.IssuedAt)
		var org, member string
		if err == nil {
			err = tx.QueryRow(ctx, `SELECT org, member FROM runner_owners WHERE runner_id = $1`, runnerID).Scan(&org, &member)
		}
		if err != nil {
			return fmt.Errorf("claim runner id: %w", err)
		}
		if org != owner.Org || member != owner.Member {
			return ErrRunnerTaken
		}
		_, err = tx.Exec(ctx, `INSERT INTO runner_tokens (id, org, member, runner_id, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, c.ID, owner.Org, owner.Member, runnerID, c.IssuedAt, c.ExpiresAt)
		if err != nil {
			return fmt.Errorf("record runner token: %w", err)
		}
		return nil
	})
}

// VerifyRunner checks a runner token: signature, audience, lifetime, and
// that its member has not revoked it.
func (s *Service) VerifyRunner(ctx context.Context, token string) (RunnerIdentity, error) {
	c, err := s.cfg.Signer.Verify(token, AudienceRunner, s.now())
	if err != nil {
		return RunnerIdentity{}, err
	}
	id := RunnerIdentity{Owner: streams.Owner{Org: c.Org, Member: c.Member}, TokenID: c.ID, ExpiresAt: c.ExpiresAt}
	id.RunnerID, err = s.liveToken(ctx, id)
	return id, err
}

// CheckRunner checks again that a verified runner token has neither
// expired nor been revoked: a long-lived request (the event stream) calls
// it on every keepalive.
func (s *Service) CheckRunner(ctx context.Context, id RunnerIdentity) error {
	if !s.now().Before(id.ExpiresAt) {
		return auth.ErrExpired
	}
	_, err := s.liveToken(ctx, id)
	return err
}

// liveToken is the runner a recorded, unrevoked token was minted for.
func (s *Service) liveToken(ctx context.Context, id RunnerIdentity) (string, error) {
	var runnerID string
	var revoked *time.Time
	err := s.cfg.Pool.QueryRow(ctx, `SELECT runner_id, revoked_at FROM runner_tokens WHERE id = $1 AND org = $2 AND member = $3`,
		id.TokenID, id.Org, id.Member).Scan(&runnerID, &revoked)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && revoked != nil) {
		return "", ErrTokenRevoked
	}
	if err != nil {
		return "", fmt.Errorf("check runner token: %w", err)
	}
	return runnerID, nil
}

// RunnerTokens lists owner's runner tokens (never the token strings).
func (s *Service) RunnerTokens(ctx context.Context, owner streams.Owner) ([]RunnerToken, error) {
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

// RevokeRunnerToken revokes one of owner's runner tokens at once: every
// request after it is refused, and the token's open event streams (on any
// spine instance) are told and closed.
func (s *Service) RevokeRunnerToken(ctx context.Context, owner streams.Owner, tokenID string) error {
	if !streams.ValidID(tokenID) {
		return ErrUnknownToken
	}
	tag, err := s.cfg.Pool.Exec(ctx, `UPDATE runner_tokens SET revoked_at = coalesce(revoked_at, $4)
		WHERE id = $1 AND org = $2 AND member = $3`, tokenID, owner.Org, owner.Member, s.now())
	if err != nil {
		return fmt.Errorf("revoke runner token: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrUnknownToken
	}
	s.announce(Announcement{Kind: kindRevoked, TokenID: tokenID, Org: owner.Org, Member: owner.Member, At: s.now()})
	return nil
}
