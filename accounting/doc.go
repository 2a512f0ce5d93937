// Package accounting is what sessions cost: one router-call row per session,
// its billing class, plan budgets and spend, and the cost reports.
//
// It owns router_calls, cost_days (a per-UTC-day rollup written in the same
// transaction as the calls), accounting_sessions (its own memory of each
// session's start, so it never reads the recorder's tables),
// router_call_requests (the ledger of the requests the apps' telemetry
// reported) and plan_budgets (docs/design.md#ownership). An Accounting is a
// streams.Handler for the SPINE_SESSIONS subjects Subjects names: session
// starts, running usage, telemetry and ends, worker disconnects and
// plan.budget events.
//
// The rules (docs/design.md#accounting):
//
//   - every session that ends writes exactly one Call, failures and
//     disconnects included; a second end adds nothing;
//   - a session only the apps' telemetry reported (session.telemetry, no
//     start) has the sum of its requests as its Call, written at its end
//     and again, with cost_days, when a request comes after it; a session
//     another door started keeps that door's end (telemetry.go), one whose
//     telemetry had ended it too: that end writes its row again, still one
//     call (reopen.go);
//   - Billing is metered, subscription or unknown, unknown whenever the app
//     reported no usage or the machine's signal was empty;
//   - a cost is what the app reported, NULL when it reported none, never
//     computed; the usage it reported is kept verbatim beside the counts
//     Normalise makes (input with cache reads and writes, output with
//     reasoning: docs/counting.md);
//   - per plan, metered, subscription and unknown spend accumulate apart;
//     a Budget's dollar ceiling counts metered dollars only, its loop cap
//     every call.
//
// Reads: Summarize answers GET /v1/cost/summary from cost_days (and, for a
// partial edge day, from router_calls), GetPlanSpend says where a plan
// stands, and WritePage renders /ui/cost. Metrics count only what was
// committed (set the projector's OnCommit to Committed).
//
//	a := accounting.New(accounting.Config{Registerer: reg})
//	p, err := streams.NewProjector(streams.ProjectorConfig{Name: accounting.ProjectorName,
//		Stream: streams.StreamSessions, Filter: accounting.Subjects(), Handler: a,
//		OnCommit: a.Committed, Pool: pool, JS: js})
package accounting
