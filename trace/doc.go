// Package trace is provenance: reads across the projections that answer
// where a file, a session or a plan came from and went. It writes nothing
// and owns no table; it joins the recorder's sessions, the work spine's
// runs, steps and observations, the artifacts the recorder and the
// library's uploads write, and the library's files, and takes router-call
// rows and plan spend from accounting's own reads (CallsOf, GetPlanSpend),
// always scoped to one org and member.
//
// A file's trace (OfID, OfDigest) lists every artifact of the caller's that
// references its digest, each with the session and step that produced it or
// the member who uploaded it, and the session's router-call row. A
// session's trace (OfSession) follows it down: its run and the planner step
// it served, how many steps and observations it recorded, what it pushed.
// A plan's trace (OfPlan) goes from the top down: a plan run (which has no
// row in runs: it is the parentRunId its sessions name) or a plan id, its
// runs, each run's steps, the sessions each step ran with their router
// calls, and each plan's spend; StepsOfPlanRun is one plan run's steps.
// CanRead decides whether a member may read a file's bytes.
//
//	f, err := trace.OfID(ctx, pool, streams.Owner{Org: "acme", Member: "alice"}, "blake3:…")
//	if errors.Is(err, trace.ErrNotFound) {
//		s, err := trace.OfSession(ctx, pool, owner, id)
//	}
//	p, err := trace.OfPlan(ctx, pool, owner, "plan-run-42", &trace.PlanOpts{OrgSpend: isAdmin})
package trace
