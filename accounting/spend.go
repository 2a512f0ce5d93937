package accounting

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PlanSpend is where a plan stands. Metered and subscription spend
// accumulate apart (the seed's tokenSpent and tokenSpentSubscription); the
// dollar ceiling counts only metered dollars, the loop cap every call.
type PlanSpend struct {
	Org                    string  `json:"org"`
	PlanID                 string  `json:"planId"`
	TokenSpent             int64   `json:"tokenSpent"`             // metered
	TokenSpentSubscription int64   `json:"tokenSpentSubscription"` // covered by a subscription
	TokenSpentUnknown      int64   `json:"tokenSpentUnknown"`      // billing unknown
	Calls                  int64   `json:"calls"`
	Spend                  Row     `json:"spend"` // per billing class: calls, tokens, reported dollars
	Ceiling                Ceiling `json:"ceiling"`
	LoopCap                LoopCap `json:"loopCap"`
	// BudgetSetBy and BudgetSetAt name the latest plan.budget event; empty
	// when the plan never had one.
	BudgetSetBy string     `json:"budgetSetBy,omitempty"`
	BudgetSetAt *time.Time `json:"budgetSetAt,omitempty"`
}

// Ceiling is the plan's dollar ceiling against its metered dollars.
type Ceiling struct {
	Dollars *json.Number `json:"dollars"` // null: no ceiling
	Spent   json.Number  `json:"spent"`   // metered dollars reported so far
	// Remaining is Dollars - Spent; null without a ceiling.
	Remaining *json.Number `json:"remaining"`
	Reached   bool         `json:"reached"` // Spent >= Dollars
	// MeteredCallsWithoutCost are metered calls whose app reported no cost:
	// while there are any, Spent is a lower bound.
	MeteredCallsWithoutCost int64 `json:"meteredCallsWithoutCost"`
}

// LoopCap is the plan's call cap against its calls, of every billing class.
type LoopCap struct {
	Cap       *int64 `json:"cap"` // null: no cap
	Calls     int64  `json:"calls"`
	Remaining *int64 `json:"remaining"`
	Reached   bool   `json:"reached"` // Calls >= Cap
}

// GetPlanSpend reports a plan of the org. A plan with neither a budget nor
// a call is ErrNotFound.
func GetPlanSpend(ctx context.Context, q Querier, org, planID string) (*PlanSpend, error) {
	rows, err := aggregate(ctx, q, `plan_id`, `plan_id = $2`, org, planID)
	if err != nil {
		return nil, err
	}
	p := &PlanSpend{Org: org, PlanID: planID, Spend: Row{Key: planID}}
	if len(rows) == 1 {
		p.Spend = rows[0]
	}
	m, s, u := p.Spend.Metered, p.Spend.Subscription, p.Spend.Unknown
	p.TokenSpent, p.TokenSpentSubscription, p.TokenSpentUnknown = m.Tokens.Total, s.Tokens.Total, u.Tokens.Total
	p.Calls = m.Calls + s.Calls + u.Calls
	p.Ceiling = Ceiling{Spent: "0", MeteredCallsWithoutCost: m.Calls - m.CallsWithCost}
	if m.Dollars != nil {
		p.Ceiling.Spent = *m.Dollars
	}
	p.LoopCap = LoopCap{Calls: p.Calls}
	found, err := p.readBudget(ctx, q)
	if err != nil {
		return nil, err
	}
	if !found && p.Calls == 0 {
		return nil, ErrNotFound
	}
	return p, nil
}

// readBudget fills the ceiling and cap from the plan's budget, computing
// the remaining dollars in numeric so no float rounding creeps in.
func (p *PlanSpend) readBudget(ctx context.Context, q Querier) (bool, error) {
	var ceiling, remaining *string
	var reached *bool
	var setAt time.Time
	err := q.QueryRow(ctx, `SELECT dollar_ceiling::text, (dollar_ceiling - $3::numeric)::text,
			dollar_ceiling <= $3::numeric, loop_cap, set_by, set_at
		FROM plan_budgets WHERE org = $1 AND plan_id = $2`, p.Org, p.PlanID, string(p.Ceiling.Spent)).
		Scan(&ceiling, &remaining, &reached, &p.LoopCap.Cap, &p.BudgetSetBy, &setAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read plan budget %s: %w", p.PlanID, err)
	}
	p.BudgetSetAt = &setAt
	if ceiling != nil {
		d, r := json.Number(*ceiling), json.Number(*remaining)
		p.Ceiling.Dollars, p.Ceiling.Remaining, p.Ceiling.Reached = &d, &r, *reached
	}
	if c := p.LoopCap.Cap; c != nil {
		r := *c - p.Calls
		p.LoopCap.Remaining, p.LoopCap.Reached = &r, p.Calls >= *c
	}
	return true, nil
}
