// Package desktop is desktop tasks, leases, runner presence and
// remoteSession: an agent hands work to its member's own desktop, a desktop
// runner claims and does it, and the member (or the agent) reads back what
// happened.
//
// Every change is a Message on the SPINE_TASKS stream —
// spine.task.<taskId>.<event> for a task's lifecycle, spine.runner.<id>.<event>
// for a runner's inventory and presence — and the "tasks" projector
// (Projection) turns them into desktop_tasks, desktop_task_events,
// desktop_task_sessions, desktop_runners and remote_sessions. Reads touch
// those tables, and remoteSession.read also the recorder's (sessions,
// session_chunks, steps, observations): each task's transcript is the app
// sessions linked to it, one task.session_linked each, which the session
// ingest publishes (LinkSession) before it takes a runner's session.start.
//
// A task is queued → claimed → running → done, or interrupted (no heartbeat
// for LeaseTTL; what it posted is kept), expired (unclaimed past deliverBy),
// cancelled, refused (the runner would not: it asks more than its owner
// allows) or failed (the runner's app died). Concurrency uses the log itself: a claim is published with
// Nats-Expected-Last-Subject-Sequence over the task's subjects
// (spine.task.<id>.>), set to the sequence the claimer read, so of many
// racing claims exactly one is stored and the rest get ErrAlreadyClaimed. The
// winning claim's stream sequence is its fencing token: the projection
// applies a heartbeat, events or completion only under the current fence,
// and the Service refuses stale ones (ErrStaleClaim). The sweeper publishes
// interruptions and expiries the same way, so two spine instances sweeping
// at once write one transition.
//
// The Service is the write side and the reads. A write validates, publishes,
// then waits until the projection applied it, so callers read their own
// writes; queued work is then announced on core NATS (spine.notify.>) to
// every instance, whose runner event streams pass it on at once.
//
//	svc, err := desktop.New(desktop.Config{Pool: pool, JS: js, NC: nc, Signer: signer})
//	err = svc.Start(ctx) // announcements
//	svc.StartSweeper()   // lost leases and passed deadlines, every second
//	p, err := streams.NewProjector(streams.ProjectorConfig{Name: desktop.ProjectorName,
//		Stream: streams.StreamTasks, Filter: desktop.Subjects(), Handler: desktop.Projection{},
//		Pool: pool, JS: js, OnCommit: svc.Committed})
//	err = p.Start(ctx) // a node starts it beside its other projectors
//	sess, err := svc.Create(ctx, owner, desktop.CreateRequest{Target: "desktop", Instructions: "run the tests"})
//	claim, err := svc.Claim(ctx, runner, sess.LatestTaskID)
//	lease, err := svc.Heartbeat(ctx, runner, sess.LatestTaskID, claim.Fence)
//
// Runner tokens (audience spine-runner, 12 h) are minted for one machine by
// a member route and recorded in runner_tokens, which VerifyRunner checks,
// so a member can revoke one at once; an open event stream (WorkStream)
// hears of the revocation and ends, and checks its token again on every
// keepalive besides. A runnerId belongs to the first member to mint for it
// (runner_owners). Prompts are stored (the desktop needs them) and never
// logged; U+0000, which PostgreSQL cannot store, becomes U+FFFD.
package desktop
