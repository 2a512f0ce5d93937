package accounting

import (
	"math"
	"regexp"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultModelCap is how many distinct served models each org may give a
// label of their own; its later ones are counted as "other", so a producer
// reporting made-up model names cannot blow up the metric's cardinality,
// and, the cap being per org, cannot use up the labels of other orgs.
const DefaultModelCap = 20

// modelName is the shape of a model the app set's vendors serve: Anthropic's
// claude-*, OpenAI's gpt-*, o1…o9 and codex-*, with an optional platform
// prefix (anthropic., us.anthropic.) and a context suffix ([1m]). /metrics
// needs no token, so a model label is only ever such a name, or "other":
// a producer's free text (a key pasted as the model) never becomes a label.
var modelName = regexp.MustCompile(`^(?:[a-z0-9-]{1,20}[./]){0,2}(?:claude|gpt|codex|o[1-9])(?:[-.][a-z0-9.:-]{1,60})?(?:\[[0-9a-z]{1,8}\])?$`)

// Label values for what was not reported, or past the model cap.
const (
	labelUnknown = "unknown"
	labelOther   = "other"
)

type metrics struct {
	calls    *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	dollars  *prometheus.CounterVec
	unpriced *prometheus.CounterVec
	modelCap int
	mu       sync.Mutex
	models   map[string]bool            // every model with a label
	byOrg    map[string]map[string]bool // the models each org brought first
}

func newMetrics(reg prometheus.Registerer, modelCap int) *metrics {
	labels := []string{"app", "billing", "door", "model"}
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_accounting_calls_total",
			Help: "Router calls (sessions ended, one each), by app, billing class, door and served model."}, labels),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_accounting_tokens_total",
			Help: "Reported tokens by kind: input (cache included), output (reasoning included), cache_read, cache_write, reasoning."},
			append(labels, "kind")),
		dollars: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_accounting_reported_dollars_total",
			Help: "US dollars the apps reported (never computed by spine)."}, labels),
		unpriced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spine_accounting_calls_without_cost_total",
			Help: "Router calls whose app reported no cost: their dollars are unknown, not zero."}, labels),
		modelCap: modelCap,
		models:   map[string]bool{},
		byOrg:    map[string]map[string]bool{},
	}
	if m.modelCap <= 0 {
		m.modelCap = DefaultModelCap
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.tokens, m.dollars, m.unpriced)
	}
	return m
}

// model is the label for a served model: itself if it is a model name and
// already labelled, or within the cap of the org that reports it first;
// "other" otherwise; "unknown" when the app did not say.
func (m *metrics) model(org, name string) string {
	if name == "" {
		return labelUnknown
	}
	if !modelName.MatchString(name) {
		return labelOther
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.models[name] {
		return name
	}
	mine := m.byOrg[org]
	if len(mine) >= m.modelCap {
		return labelOther
	}
	if mine == nil {
		mine = map[string]bool{}
		m.byOrg[org] = mine
	}
	mine[name], m.models[name] = true, true
	return name
}

// labels are a call's label values: app, billing, door, model.
func (m *metrics) labels(c *Call) []string {
	door := c.Door
	if door == "" {
		door = labelUnknown
	}
	return []string{c.App, c.Billing, door, m.model(c.Org, c.ServedModel)}
}

func (m *metrics) observe(c *Call) {
	lv := m.labels(c)
	m.calls.WithLabelValues(lv...).Inc()
	if c.TotalCost != nil {
		addTo(m.dollars.WithLabelValues(lv...), *c.TotalCost)
	} else {
		m.unpriced.WithLabelValues(lv...).Inc()
	}
	if t := c.Tokens; t != nil {
		for kind, n := range map[string]int64{"input": t.Input, "output": t.Output, "cache_read": t.CacheRead,
			"cache_write": t.CacheWrite, "reasoning": t.Reasoning} {
			addTo(m.tokens.WithLabelValues(append(lv, kind)...), float64(n))
		}
	}
}

// observeGrowth counts what a rewritten row added: its tokens' and
// reported dollars' difference, under the row's labels now. Its call was
// counted when it was first written.
func (m *metrics) observeGrowth(rw rewrite) {
	c := rw.new
	lv := m.labels(c)
	if c.TotalCost != nil {
		was := 0.0
		if rw.old.TotalCost != nil {
			was = *rw.old.TotalCost
		}
		addTo(m.dollars.WithLabelValues(lv...), *c.TotalCost-was)
	}
	ot, nt := tokenCounts(rw.old.Tokens), tokenCounts(c.Tokens)
	for i, kind := range []string{"input", "output", "cache_read", "cache_write", "reasoning"} {
		addTo(m.tokens.WithLabelValues(append(lv, kind)...), float64(nt[i]-ot[i]))
	}
}

// addTo adds v to a counter unless v is negative, infinite or NaN:
// Counter.Add panics on a negative value, and validation should have kept
// every such figure out, so it is skipped rather than crash the process.
func addTo(c prometheus.Counter, v float64) {
	if v >= 0 && !math.IsInf(v, 1) {
		c.Add(v)
	}
}
