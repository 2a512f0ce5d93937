package node

import (
	"context"
	"net/http"

	"github.com/spinehq/spine/desktop"
	"github.com/spinehq/spine/gateway"
	"github.com/spinehq/spine/streams"
)

// startDesktop starts desktop tasks and remote sessions: the work
// announcements and, unless noProjectors, the "tasks" projector, whose
// commits wake the service's waiting writes. The sweeper starts with HTTP
// (desktopHTTP): a node that serves nothing (a rebuild) must not write
// transitions into the live log.
func (n *Node) startDesktop(ctx context.Context, noProjectors bool) error {
	svc, err := desktop.New(desktop.Config{Pool: n.Pool, JS: n.JS, NC: n.NC, Signer: n.Signer, Logger: n.log,
		BaseURL: n.cfg.PublicURL})
	if err != nil {
		return err
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	n.Desktop = svc
	n.stops = append(n.stops, svc.Stop)
	if noProjectors {
		return nil
	}
	_, err = n.StartProjector(ctx, streams.ProjectorConfig{Name: desktop.ProjectorName, Stream: streams.StreamTasks,
		Filter: desktop.Subjects(), Handler: desktop.Projection{}, OnCommit: svc.Committed})
	return err
}

// desktopHTTP wires the desktop service into a serving node: links to the
// listen address unless the configuration's PublicURL says otherwise, event
// streams closed on shutdown (they never go idle by themselves), and the
// sweeper.
func (n *Node) desktopHTTP(srv *http.Server) {
	if n.Desktop == nil {
		return
	}
	if n.cfg.PublicURL == "" {
		n.Desktop.SetBaseURL("http://" + n.listener.Addr().String())
	}
	srv.RegisterOnShutdown(n.Desktop.CloseStreams)
	n.Desktop.StartSweeper()
}

// mcp is the MCP endpoint on a node with a desktop service, else nil.
func (n *Node) mcp() http.Handler {
	if n.Desktop == nil {
		return nil
	}
	return gateway.New(gateway.Config{Desktop: n.Desktop, Signer: n.Signer, Logger: n.log})
}
