package accounting

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// PlanSpend is where a plan stands. Metered and subscription spend
// accumulate apart (tokenSpent and tokenSpentSubscription,
// docs/design.md#accounting); the
// dollar ceiling counts only metered dollars, the loop cap every call.
//
// Scoped to one member (Member set), it counts only that member's calls and
// has no budget: a plan's standing against its budget counts every member's
// calls, and which plan a session carries is the producer's word.
type PlanSpend struct {
	Org    string `json:"org"`
	PlanID string `json:"planId"`
	// Member is the one member whose calls are counted; absent when every
	// member's are (an org admin's view).
	Member                 string `json:"member,omitempty"`
	TokenSpent             int64  `json:"tokenSpent"`             // metered
	TokenSpentSubscription int64  `json:"tokenSpentSubscription"` // covered by a subscription
	TokenSpentUnknown      int64  `json:"tokenSpentUnknown"`      // billing unknown
	Calls                  int64  `json:"calls"`
	Spend                  Row    `json:"spend"` // per billing class: calls, tokens, reported dollars
	// Ceiling and LoopCap are the plan's budget against all its calls; nil
	// (absent) when the spend is scoped to a member.
	Ceiling *Ceiling `json:"ceiling,omitempty"`
	LoopCap *LoopCap `json:"loopCap,omitempty"`
	// BudgetSetBy and BudgetSetAt name the latest plan.budget event; empty
	// when the plan never had one or the spend is scoped to a member.
	BudgetSetBy string     `json:"budgetSetBy,omitempty"`
	BudgetSetAt *time.Time `json:"budgetSetAt,omitempty"`
}

// Ceiling is the plan's dollar ceiling against its metered dollars.
type Ceiling struct {
	Dollars *json.Number `json:"dollars"` // null: no ceiling
	// Spent is the metered dollars reported so far: "0" when the plan has
	// no metered call, null ("not reported") when it has some and none of
	// them reported a cost, and a lower bound while MeteredCallsWithoutCost
	// is above 0. It is never 0 for "unknown".
	Spent *json.Number `json:"spent"`
	// Remaining is Dollars - Spent; null without a ceiling or when Spent is
	// not reported.
	Remaining *json.Number `json:"remaining"`
	// Reached is Spent >= Dollars; null without a ceiling or when Spent is
	// not reported. A lower bound can show a ceiling reached, never that it
	// is not.
	Reached *bool `json:"reached"`
	// MeteredCallsWithoutCost are metered calls whose app reported no cost.
	MeteredCallsWithoutCost int64 `json:"meteredCallsWithoutCost"`
	// Note says in words why Spent is null or a lower bound; empty when
	// every metered call reported its cost.
	Note string `json:"note,omitempty"`
}

// meteredSpent fills Spent and Note from the plan's metered cell.
func (c *Ceiling) meteredSpent(m Cell) {
	c.MeteredCallsWithoutCost = m.Calls - m.CallsWithCost
	switch {
	case m.Calls == 0:
		zero := json.Number("0")
		c.Spent = &zero
	case m.CallsWithCost == 0:
		calls := "calls"
		if m.Calls == 1 {
			calls = "call"
		}
		c.Note = fmt.Sprintf("no cost reported for any of the plan's %d metered %s", m.Calls, calls)
	default:
		c.Spent = m.Dollars
		if c.MeteredCallsWithoutCost > 0 {
			c.Note = fmt.Sprintf("a lower bound: %d of the plan's %d metered calls reported no cost",
				c.MeteredCallsWithoutCost, m.Calls)
		}
	}
}

// LoopCap is the plan's call cap against its calls, of every billing class.
type LoopCap struct {
	Cap       *int64 `json:"cap"` // null: no cap
	Calls     int64  `json:"calls"`
	Remaining *int64 `json:"remaining"`
	Reached   bool   `json:"reached"` // Calls >= Cap
}

// GetPlanSpend reports a plan of the org: every member's calls and the
// plan's budget when member is empty, else only that member's calls. A plan
// with neither a budget nor a call, or a member without a call on it, is
// ErrNotFound.
func GetPlanSpend(ctx context.Context, q streams.Querier, org, planID, member string) (*PlanSpend, error) {
	p := &PlanSpend{Org: org, PlanID: planID, Member: member, Spend: Row{Key: planID}}
	if err := p.readCalls(ctx, q); err != nil {
		return nil, err
	}
	if member != "" {
		if p.Calls == 0 {
			return nil, ErrNotFound
		}
		return p, nil
	}
	p.Ceiling, p.LoopCap = &Ceiling{}, &LoopCap{Calls: p.Calls}
	p.Ceiling.meteredSpent(p.Spend.Metered)
	found, err := p.readBudget(ctx, q)
	if err != nil {
		return nil, err
	}
	if !found && p.Calls == 0 {
		return nil, ErrNotFound
	}
	return p, nil
}

// readCalls fills the spend from the plan's router calls (the member's
// only, when p.Member is set).
func (p *PlanSpend) readCalls(ctx context.Context, q streams.Querier) error {
	where, args := `plan_id = $2`, []any{p.Org, p.PlanID}
	if p.Member != "" {
		where, args = where+` AND member = $3`, append(args, p.Member)
	}
	rows, err := aggregate(ctx, q, `plan_id`, where, args...)
	if err != nil {
		return err
	}
	if len(rows) == 1 {
		p.Spend = rows[0]
	}
	m, s, u := p.Spend.Metered, p.Spend.Subscription, p.Spend.Unknown
	p.TokenSpent, p.TokenSpentSubscription, p.TokenSpentUnknown = m.Tokens.Total, s.Tokens.Total, u.Tokens.Total
	p.Calls = m.Calls + s.Calls + u.Calls
	return nil
}

// spentArg is Spent as a query argument: NULL when not reported, so the
// remaining dollars and reached are NULL too.
func (c *Ceiling) spentArg() *string {
	if c.Spent == nil {
		return nil
	}
	s := c.Spent.String()
	return &s
}

// readBudget fills the ceiling and cap from the plan's budget, computing
// the remaining dollars in numeric so no float rounding creeps in.
func (p *PlanSpend) readBudget(ctx context.Context, q streams.Querier) (bool, error) {
	var ceiling, remaining *string
	var reached *bool
	var setAt time.Time
	err := q.QueryRow(ctx, `SELECT dollar_ceiling::text, (dollar_ceiling - $3::numeric)::text,
			dollar_ceiling <= $3::numeric, loop_cap, set_by, set_at
		FROM plan_budgets WHERE org = $1 AND plan_id = $2`, p.Org, p.PlanID, p.Ceiling.spentArg()).
		Scan(&ceiling, &remaining, &reached, &p.LoopCap.Cap, &p.BudgetSetBy, &setAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read plan budget %s: %w", p.PlanID, err)
	}
	p.BudgetSetAt = &setAt
	if ceiling != nil {
		d := json.Number(*ceiling)
		p.Ceiling.Dollars, p.Ceiling.Reached = &d, reached
		if remaining != nil {
			r := json.Number(*remaining)
			p.Ceiling.Remaining = &r
		}
	}
	if c := p.LoopCap.Cap; c != nil {
		r := *c - p.Calls
		p.LoopCap.Remaining, p.LoopCap.Reached = &r, p.Calls >= *c
	}
	return true, nil
}

// CarriesPlan reports whether a session of the member carries the plan,
// which is the producer's word: it earns a member no more than the spend of
// their own calls on the plan. A session counts once it has its router-call
// row (it has ended), since spend is counted from those.
func CarriesPlan(ctx context.Context, q streams.Querier, org, planID, member string) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT FROM router_calls
		WHERE org = $1 AND plan_id = $2 AND plan_id <> '' AND member = $3)`, org, planID, member).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("plan %s of a member: %w", planID, err)
	}
	return ok, nil
}
