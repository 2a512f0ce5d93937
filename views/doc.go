// Package views holds the reads behind spine's pages that join several
// projections; it writes nothing and owns no table. A read of one
// projection's table stays in the package that owns it (recorder, spine,
// desktop, accounting); a page that needs several of them reads them
// here, one file per page's read, each bounded and scoped to the caller.
//
// A recorded session's page (/ui/sessions/{id}) reads its facts with
// ReadSession: the recorder's row in the caller's scope, the router-call
// row accounting wrote at its end, and the remote session of its task.
// Its events poll ReadProgress.
//
//	s, err := views.ReadSession(ctx, pool, streams.Owner{Org: "acme", Member: "alice"}, "s1")
//	if errors.Is(err, recorder.ErrNotFound) { /* missing, or not the caller's: one answer */ }
//
// The sessions page (/ui/sessions) reads a page of the caller's sessions
// with Sessions, newest first by a keyset cursor (never an OFFSET), each
// with the billing class of its router-call row; its events poll
// SessionsMark, a digest of what the page shows.
//
//	page, err := views.Sessions(ctx, pool, owner, views.SessionFilter{App: "codex"}, nil, views.SessionsPageSize)
//	// page.Sessions, page.Running, and page.Older for the next page
package views
