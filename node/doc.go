// Package node runs one spine: a nats-server (embedded, or an external NATS
// cluster), PostgreSQL (given, discovered, or a private cluster started under
// the data directory), migrations, streams, projectors and the HTTP API.
// `spine serve` is a Node; so are the end-to-end tests and `spine bench`.
//
//	n, err := node.Start(ctx, cfg, logger)
//	defer n.Stop()
//	fmt.Println(n.HTTPAddr(), n.DevToken())
//
// Stop drains: the HTTP server stops taking requests, each projector lets
// its batch in flight commit and ack, then the connections close and a
// private PostgreSQL spine started is stopped.
package node
