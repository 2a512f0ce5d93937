// Package gateway is spine's MCP endpoint: Streamable HTTP at /mcp, bearer
// authenticated with a member token, exposing exactly two tools.
//
// search_capabilities finds capabilities by words (name, summary and the
// JSON Schema of their arguments); execute_capability runs one by name.
// Everything spine can do for an agent is a capability behind those two
// tools — remoteSession.create, send, read, list and cancel today — so the
// tool list every MCP client sees never grows (docs/design.md#mcp). An
// unknown name is the tool error unknown_capability.
//
// The caller is the {org, member} of the verified token, never an
// argument. Runner tokens are refused here, and no capability mints them.
//
// create and send results carry an MCP Apps card: a ui:// resource of type
// text/html;profile=mcp-app named by the result's _meta.ui.resourceUri
// (the tool itself lists the generic card), showing the session's title,
// state, last activity and a link to its page on spine, with the same
// content as plain text for clients without MCP Apps. The cards' markup is
// server/pages', like every page spine serves.
//
//	h := gateway.New(gateway.Config{Desktop: svc, Signer: signer})
//	mux.Handle("/mcp", h)
package gateway
