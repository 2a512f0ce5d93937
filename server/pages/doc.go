// Package pages renders every HTML page spine serves, one way: html/template
// over the templates embedded beside this file (cost.html, session.html,
// card.html, error.html), with the data laid out by the package that owns
// it: accounting.PageData for the cost page, desktop's ReadResult for a
// remote session's page, desktop.Session for its MCP Apps card.
//
// The callers set the headers (content type, Content-Security-Policy,
// caching); pages writes only the markup.
//
//	var b bytes.Buffer
//	err := pages.Cost(&b, accounting.Page{Summary: sum, Measure: "tokens"}.Data())
package pages
