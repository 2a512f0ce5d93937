package recorder

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spinehq/spine/streams"
)

// A step with a call id is one per run (steps_call): an MCP call the node
// and the session both told, a tool use a hook and an OTLP export both
// told. preloadCalls reads, with one query, the steps of earlier batches
// whose call ids the batch's envelopes name, so each is seen as recorded
// whichever batch recorded it, and which of them a start would supersede
// (merge_steps.go).
func (b *batch) preloadCalls(ctx context.Context, envs []*streams.Envelope) error {
	var runs, calls []string
	for _, e := range envs {
		if id := callOf(e); id != "" && b.sessions[e.SessionID] != nil {
			runs, calls = append(runs, RunID(e.SessionID)), append(calls, id)
		}
	}
	if len(runs) == 0 {
		return nil
	}
	rows, err := b.tx.Query(ctx, `SELECT s.run_id, s.call_id, s.id, s.source, s.action
		FROM unnest($1::text[], $2::text[]) AS u(run_id, call_id),
		LATERAL (SELECT run_id, call_id, id, source, action FROM steps WHERE run_id = u.run_id AND call_id = u.call_id LIMIT 1) s`,
		runs, calls)
	if err != nil {
		return fmt.Errorf("find %d calls: %w", len(runs), err)
	}
	var run, call, id, source, action string
	_, err = pgx.ForEachRow(rows, []any{&run, &call, &id, &source, &action}, func() error {
		b.calls[run+"\x00"+call] = id
		if supersedable(source, action) {
			b.supersedable[run+"\x00"+call] = true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("find %d calls: %w", len(runs), err)
	}
	return nil
}

// callOf is the call id a step made from e would carry: a telemetry
// tool's use id, an mcp_call event's call id, an mcp.call record's.
func callOf(e *streams.Envelope) string {
	switch {
	case e == nil:
		return ""
	case e.Type == streams.TypeSessionTelemetry && e.Telemetry.Kind == streams.TelemetryTool:
		return e.Telemetry.ToolUseID
	case e.Type == streams.TypeSessionChunk && e.Event != nil && e.Event.Action == "mcp_call":
		return e.Event.CallID
	case e.Type == streams.TypeMCPCall:
		return e.CallID
	}
	return ""
}
