// Package trace is provenance: reads across the projections that answer
// where a file or a session came from. It writes nothing and owns no table;
// it joins the recorder's sessions, the work spine's runs, steps and
// observations, the artifacts the recorder and the library's uploads write,
// the library's files, and accounting's router_calls, always scoped to one
// org and member.
//
// A file's trace (OfID, OfDigest) lists every artifact of the caller's that
// references its digest, each with the session and step that produced it or
// the member who uploaded it, and the session's router-call row. A
// session's trace (OfSession) follows it down: its run and the planner step
// it served, how many steps and observations it recorded, what it pushed.
// CanRead decides whether a member may read a file's bytes.
//
//	f, err := trace.OfID(ctx, pool, streams.Owner{Org: "acme", Member: "alice"}, "blake3:…")
//	if errors.Is(err, trace.ErrNotFound) {
//		s, err := trace.OfSession(ctx, pool, owner, id)
//	}
package trace
