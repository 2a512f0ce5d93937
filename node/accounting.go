package node

import (
	"context"

	"github.com/spinehq/spine/accounting"
	"github.com/spinehq/spine/streams"
)

// startAccounting starts the accounting projector: router calls and plan
// budgets from SPINE_SESSIONS, its metrics on the node's registry.
func (n *Node) startAccounting(ctx context.Context) error {
	a := accounting.New(accounting.Config{Logger: n.log, Registerer: n.Registry})
	p, err := n.StartProjector(ctx, streams.ProjectorConfig{Name: accounting.ProjectorName, Stream: streams.StreamSessions,
		Accept: streams.SubjectMatcher(accounting.Subjects()), Filter: accounting.Subjects(), Handler: a, OnCommit: a.Committed})
	n.accounting = p
	return err
}

// Accounting is the accounting projector (nil with NoProjectors).
func (n *Node) Accounting() *streams.Projector { return n.accounting }
