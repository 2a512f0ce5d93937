package telemetry

import metricsv1 "go.opentelemetry.io/proto/slim/otlp/metrics/v1"

// Points counts a metrics request's data points by the app its resource
// names ("claude-code", "codex", or "" for any other): spine takes the
// apps' metrics so their exporters do not retry, and counts them; what
// they measure, the logs carry per request (docs/telemetry.md).
func Points(d *metricsv1.MetricsData) map[string]int {
	out := map[string]int{}
	for _, rm := range d.GetResourceMetrics() {
		app, _ := appOf(attrs(rm.GetResource().GetAttributes()))
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				out[app] += len(m.GetGauge().GetDataPoints()) + len(m.GetSum().GetDataPoints()) +
					len(m.GetHistogram().GetDataPoints()) + len(m.GetExponentialHistogram().GetDataPoints()) +
					len(m.GetSummary().GetDataPoints())
			}
		}
	}
	return out
}
