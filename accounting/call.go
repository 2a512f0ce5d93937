package accounting

import (
	"encoding/json"
	"time"

	"github.com/spinehq/spine/streams"
)

// Billing classes of a router call.
const (
	BillingMetered      = "metered"
	BillingSubscription = "subscription"
	BillingUnknown      = "unknown"
)

// BillingClasses lists the classes in the order reports show them.
var BillingClasses = []string{BillingMetered, BillingSubscription, BillingUnknown}

// Billing is the billing class of a call: unknown whenever the app's usage
// report or the machine's subscription signal is silent, else the signal.
func Billing(usage *streams.Usage, signal string) string {
	if usage == nil || signal == "" {
		return BillingUnknown
	}
	return signal
}

// Tokens are normalised token counts, following the OpenTelemetry GenAI
// convention (gen_ai.usage.*): Input includes CacheRead and CacheWrite, and
// Output includes Reasoning. Input + Output counts every token once.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
	Reasoning  int64 `json:"reasoning"`
	// Total is every token counted once: Input plus Output.
	Total int64 `json:"total"`
}

// Normalise turns a session.end's usage into OpenTelemetry terms. The
// envelope's buckets follow the app's own report: inputTokens is the input
// that neither read nor wrote the cache (Anthropic's input_tokens), and
// reasoningTokens is a part of outputTokens (as OpenAI reports it). So
// input = inputTokens + cacheReadTokens + cacheWriteTokens and output =
// outputTokens. nil means the app reported no usage.
//
// Envelope validation keeps every count within 0 to streams.MaxTokens;
// Normalise clamps to that range as well, so its sums never overflow int64
// into a negative count whatever it is handed.
func Normalise(u *streams.Usage) *Tokens {
	if u == nil {
		return nil
	}
	in, out := clampCount(u.InputTokens), clampCount(u.OutputTokens)
	cr, cw, rs := clampCount(u.CacheReadTokens), clampCount(u.CacheWriteTokens), clampCount(u.ReasoningTokens)
	t := &Tokens{Input: in + cr + cw, Output: out, CacheRead: cr, CacheWrite: cw, Reasoning: rs}
	t.Total = t.Input + t.Output
	return t
}

// clampCount keeps a reported token count within 0 to streams.MaxTokens.
func clampCount(n int64) int64 { return min(max(n, 0), streams.MaxTokens) }

// Call is a router-call row, one per session (docs/design.md#accounting).
type Call struct {
	SessionID        string          `json:"sessionId"`
	Org              string          `json:"org"`
	Member           string          `json:"member"`
	App              string          `json:"app"`
	PlanID           string          `json:"planId"`
	WorkerID         string          `json:"workerId"` // the machine: the session's workerId; "" = none named
	ExecutionSurface string          `json:"executionSurface"`
	Door             string          `json:"door"` // app, session; "" when not reported
	Status           string          `json:"status"`
	Billing          string          `json:"billing"`
	BillingSignal    string          `json:"billingSignal"` // what the machine said; "" = silent
	ServedModel      string          `json:"servedModel"`   // as reported; "" = unknown
	ServedEffort     string          `json:"servedEffort"`  // as reported; "" = unknown
	Usage            json.RawMessage `json:"usage"`         // the report verbatim; null = none
	Tokens           *Tokens         `json:"tokens"`        // normalised; null = no report
	TotalCost        *float64        `json:"totalCost"`     // USD as reported; null = not reported
	StartedAt        time.Time       `json:"startedAt"`
	At               time.Time       `json:"at"` // when the session ended
	// costText is TotalCost as the exact decimal router_calls holds, where a
	// float would round it: a telemetry session's sum of its requests'
	// costs (numeric's sum), or a row read back. nil: TotalCost's own text.
	costText *string
}

// cost is the row's total_cost as a decimal; nil when none was reported.
func (c *Call) cost() *string {
	if c.costText != nil {
		return c.costText
	}
	return streams.CostText(c.TotalCost)
}

// ExecutionSurface is where an app's call ran: cockpit-app:<app>.
func ExecutionSurface(app string) string { return "cockpit-app:" + app }

// callFromEnd builds the row for a session that ended with e. The idle
// sweeper's end (swept) reports nothing: the row takes the usage and cost
// the producer last reported while the session ran (session.usage), as
// reported, billing unknown.
func callFromEnd(s *session, e *streams.Envelope, swept bool) *Call {
	c := s.call(e.Status, e.At)
	c.Door, c.BillingSignal = e.Door, e.Billing
	c.Billing = Billing(e.Usage, e.Billing)
	c.ServedModel, c.ServedEffort = e.Model, e.Effort
	usage, cost := e.Usage, e.TotalCost
	if swept && usage == nil {
		usage, cost = s.Usage, s.TotalCost
	}
	c.TotalCost = cost
	c.setUsage(usage)
	return c
}

// setUsage puts the usage, normalised and verbatim, on the row (nil: none).
func (c *Call) setUsage(u *streams.Usage) {
	c.Tokens = Normalise(u)
	if u != nil {
		c.Usage, _ = json.Marshal(u) // a struct of numbers and raw JSON: cannot fail
	}
}

// callFromDisconnect builds the row for a session its worker's disconnect
// ended: nothing was reported at the end, so billing is unknown; usage and
// cost are what the producer last reported while it ran (session.usage),
// NULL when nothing.
func callFromDisconnect(s *session, at time.Time) *Call {
	c := s.call("disconnected", at)
	c.Billing = BillingUnknown
	c.TotalCost = s.TotalCost
	c.setUsage(s.Usage)
	return c
}
