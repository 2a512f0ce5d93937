// Package pages renders every HTML page spine serves, one way: html/template
// over the templates embedded beside this file, one file per page
// (sessions.html, session.html, remote.html, remote_list.html, cost.html,
// provenance.html, plan.html, deadletters.html; card.html for the MCP Apps
// card, error.html for a page that says one thing) inside one frame
// (layout.html: "top" and "bottom"). Each page is rendered from a View, the
// frame's parts and the page's data: a view type of this package
// (RemoteListView, DeadLettersView, ProvenanceView, SessionView, …) or the
// owning package's own (accounting.PageData, *trace.Plan).
//
// The callers set the headers (content type, Content-Security-Policy,
// caching); pages writes only the markup.
//
//	var b bytes.Buffer
//	err := pages.Render(&b, "deadletters", pages.View{Title: "Dead letters", Section: "deadletters",
//		Data: pages.DeadLettersView{DeadLetters: dls}})
package pages
