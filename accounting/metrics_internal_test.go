package accounting

import (
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// A figure validation should have refused never reaches Counter.Add, which
// panics on a negative value and would crash the process.
func TestMetricsSkipImpossibleFigures(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry(), 0)
	for _, cost := range []float64{-1, math.Inf(1), math.NaN(), 2.5} {
		m.observe(&Call{App: "codex", Billing: BillingMetered, TotalCost: &cost,
			Tokens: &Tokens{Input: -5, Output: math.MinInt64, Reasoning: 7}})
	}
	lv := []string{"codex", BillingMetered, labelUnknown, labelUnknown}
	if got := value(t, m.dollars.WithLabelValues(lv...)); got != 2.5 {
		t.Errorf("dollars = %g, want 2.5", got)
	}
	for kind, want := range map[string]float64{"input": 0, "output": 0, "reasoning": 28} {
		if got := value(t, m.tokens.WithLabelValues(append(lv, kind)...)); got != want {
			t.Errorf("%s tokens = %g, want %g", kind, got, want)
		}
	}
	if got := value(t, m.calls.WithLabelValues(lv...)); got != 4 {
		t.Errorf("calls = %g, want 4", got)
	}
}

func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// A model label is a model's name or "other": free text a producer puts in
// model (a key, a sentence, a redaction mark) never becomes a label.
func TestModelLabelIsAModelName(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry(), 0)
	for name, want := range map[string]string{
		"claude-sonnet-4-5-20250929":                   "claude-sonnet-4-5-20250929",
		"claude-opus-4-1-20250805[1m]":                 "claude-opus-4-1-20250805[1m]",
		"us.anthropic.claude-3-5-sonnet-20240620-v1:0": "us.anthropic.claude-3-5-sonnet-20240620-v1:0",
		"gpt-5-codex":                           "gpt-5-codex",
		"o4-mini":                               "o4-mini",
		"":                                      labelUnknown,
		"sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA": labelOther,
		"[REDACTED]":                            labelOther,
		"my model is great":                     labelOther,
		"claude-" + string(make([]byte, 100)):   labelOther,
		"Claude-Sonnet":                         labelOther,
	} {
		if got := m.model("o1", name); got != want {
			t.Errorf("model(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestModelCapIsPerOrg: one org filling its labels with made-up models
// leaves another org's real model its own label.
func TestModelCapIsPerOrg(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry(), 3)
	for i := range 10 {
		m.model("noisy", fmt.Sprintf("claude-made-up-%d", i))
	}
	if got := m.model("noisy", "claude-made-up-99"); got != labelOther {
		t.Errorf("past its cap, noisy got %q", got)
	}
	if got := m.model("quiet", "claude-sonnet-4-5"); got != "claude-sonnet-4-5" {
		t.Errorf("quiet's model = %q: another org used up its labels", got)
	}
	if got := m.model("quiet", "claude-made-up-1"); got != "claude-made-up-1" {
		t.Errorf("a model already labelled = %q", got)
	}
}
