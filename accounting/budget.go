package accounting

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/spinehq/spine/streams"
)

// TypePlanBudget is the type of a plan budget event.
const TypePlanBudget = "plan.budget"

// subjectPlan prefixes plan subjects; streams.StreamConfigs lists
// "spine.plan.>" among SPINE_SESSIONS' subjects.
const subjectPlan = "spine.plan."

// PlanSubject is spine.plan.<planId>.budget.
func PlanSubject(planID string) string { return subjectPlan + planID + ".budget" }

// MaxBudgetBytes bounds one plan.budget message.
const MaxBudgetBytes = 4 << 10

// Budget is a plan.budget event, version 1: it sets a plan's whole budget.
// A nil limit means none, so an event with neither clears the budget.
type Budget struct {
	V      int       `json:"v"`
	Type   string    `json:"type"`
	ID     string    `json:"id"`
	At     time.Time `json:"at"`
	PlanID string    `json:"planId"`
	Org    string    `json:"org"`
	Member string    `json:"member"` // who set it
	// DollarCeiling is the most metered dollars the plan may spend, as a
	// plain decimal (see MaxDollarDigits), stored exactly as written;
	// subscription and unknown-billed dollars never count.
	DollarCeiling *Dollars `json:"dollarCeiling"`
	// LoopCap is the most calls (sessions) the plan may make, of any billing.
	LoopCap *int64 `json:"loopCap"`
}

// Dollars is a dollar amount: a JSON number, never a string. encoding/json
// would read "10" into a json.Number as 10; a budget is refused with
// wrong_field_type instead, as every other number field of a message is.
type Dollars string

// String is the amount as written.
func (d Dollars) String() string { return string(d) }

// MarshalJSON writes the amount as the number it is.
func (d Dollars) MarshalJSON() ([]byte, error) {
	if !json.Valid([]byte(d)) {
		return nil, fmt.Errorf("dollars %q is not a number", string(d))
	}
	return []byte(d), nil
}

// UnmarshalJSON takes a JSON number only.
func (d *Dollars) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return &json.UnmarshalTypeError{Value: "string", Type: reflect.TypeFor[float64]()}
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*d = Dollars(n)
	return nil
}

// A dollar amount is a plain decimal: at most MaxDollarDigits digits
// before the point and MaxDollarDecimals after it, no sign, no exponent.
// PostgreSQL's numeric stores such text exactly; "1e-20000" or "1e400"
// would be rounded by a float reading and refused or overflowed by numeric.
const (
	MaxDollarDigits   = 12
	MaxDollarDecimals = 6
)

var dollarsRE = regexp.MustCompile(fmt.Sprintf(`^(0|[1-9][0-9]{0,%d})(\.[0-9]{1,%d})?$`, MaxDollarDigits-1, MaxDollarDecimals))

// Validate checks the event against the contract.
func (b *Budget) Validate() error {
	if b.V != 1 {
		return streams.Reject(streams.ReasonUnknownVersion, "v=%d, this spine speaks v=1", b.V)
	}
	if b.Type != TypePlanBudget {
		return streams.Reject(streams.ReasonUnknownType, "type %q", b.Type)
	}
	for _, f := range []struct{ name, v string }{{"id", b.ID}, {"planId", b.PlanID}} {
		if f.v == "" {
			return streams.Reject(streams.ReasonMissingField, "%s is required", f.name)
		}
		if !streams.ValidID(f.v) {
			return streams.Reject(streams.ReasonInvalidID, "%s must be 1-%d letters, digits, '-' or '_'", f.name, streams.MaxIDLen)
		}
	}
	if b.At.IsZero() {
		return streams.Reject(streams.ReasonMissingField, "at is required")
	}
	if _, err := b.At.MarshalJSON(); err != nil {
		return streams.Reject(streams.ReasonInvalidField, "at: %v", err)
	}
	if err := streams.CheckTime("at", b.At); err != nil {
		return err
	}
	if !streams.ValidOwnerID(b.Org) || !streams.ValidOwnerID(b.Member) {
		return streams.Reject(streams.ReasonInvalidID, "org and member must be 1-%d letters, digits, '-', '_', '.' or '@'", streams.MaxIDLen)
	}
	if b.LoopCap != nil && *b.LoopCap < 0 {
		return streams.Reject(streams.ReasonInvalidField, "loopCap must not be negative")
	}
	if b.DollarCeiling != nil {
		if err := checkDollars(string(*b.DollarCeiling)); err != nil {
			return streams.Reject(streams.ReasonInvalidField, "dollarCeiling: %v", err)
		}
	}
	return nil
}

// checkDollars accepts a plain decimal amount of dollars within bounds.
func checkDollars(s string) error {
	if !dollarsRE.MatchString(s) {
		return fmt.Errorf("%q must be a plain decimal of at most %d digits before the point and %d after it (e.g. 12.50)",
			s, MaxDollarDigits, MaxDollarDecimals)
	}
	return nil
}

// DecodeBudget parses and validates one plan.budget event. Every failure is
// a *streams.Rejection, so it can be dead-lettered as is.
func DecodeBudget(data []byte) (*Budget, error) {
	if len(data) > MaxBudgetBytes {
		return nil, streams.Reject(streams.ReasonTooLarge, "plan.budget is %d bytes, limit %d", len(data), MaxBudgetBytes)
	}
	if !utf8.Valid(data) {
		return nil, streams.Reject(streams.ReasonInvalidUTF8, "plan.budget is not valid UTF-8")
	}
	var b Budget
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&b); err != nil {
		return nil, budgetDecodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, streams.Reject(streams.ReasonMalformed, "trailing data after the plan.budget")
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return &b, nil
}

func budgetDecodeError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return streams.Reject(streams.ReasonWrongType, "field %q: got JSON %s, want %s", te.Field, te.Value, te.Type)
	case errors.As(err, &se), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return streams.Reject(streams.ReasonMalformed, "%v", err)
	default:
		return streams.Reject(streams.ReasonWrongType, "%v", err)
	}
}

// isPlanSubject reports whether a stored message is a plan event.
func isPlanSubject(subject string) bool { return strings.HasPrefix(subject, subjectPlan) }

// PublishBudget validates b and publishes it on its plan's subject with its
// id as Nats-Msg-Id, so a retried publish is stored once.
func PublishBudget(ctx context.Context, js jetstream.Publisher, b *Budget) (*jetstream.PubAck, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode plan.budget %s: %w", b.ID, err)
	}
	msg := nats.NewMsg(PlanSubject(b.PlanID))
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, b.ID)
	ack, err := js.PublishMsg(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("publish plan.budget %s: %w", b.ID, err)
	}
	return ack, nil
}
