package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	logsv1 "go.opentelemetry.io/proto/slim/otlp/logs/v1"

	"github.com/spinehq/spine/streams"
	"github.com/spinehq/spine/telemetry"
)

// The OTLP baseline's table: one row per telemetry envelope, keyed as the
// recorder's ledger and steps are (the session and the request or tool use).
const (
	rawTelemetryTable = "bench_raw_telemetry"
	rawTelemetryDDL   = `CREATE TABLE ` + rawTelemetryTable + ` (
	session_id text NOT NULL,
	kind       text NOT NULL,
	key        text NOT NULL,
	at         timestamptz NOT NULL,
	telemetry  jsonb NOT NULL,
	PRIMARY KEY (session_id, kind, key))`
)

var rawTelemetry = rawShape{table: rawTelemetryTable, ddl: rawTelemetryDDL,
	columns: []string{"session_id", "kind", "key", "at", "telemetry"}, row: telemetryRow}

// telemetryRow is a session.telemetry's columns, its telemetry kept whole.
func telemetryRow(data []byte) ([]any, bool, error) {
	var e struct {
		Type      string          `json:"type"`
		SessionID string          `json:"sessionId"`
		At        time.Time       `json:"at"`
		Telemetry json.RawMessage `json:"telemetry"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, false, err
	}
	var t struct{ Kind, RequestID, ToolUseID string }
	if err := json.Unmarshal(e.Telemetry, &t); err != nil {
		return nil, false, err
	}
	return []any{e.SessionID, t.Kind, t.RequestID + t.ToolUseID, e.At, string(e.Telemetry)},
		e.Type == streams.TypeSessionTelemetry, nil
}

// rawPhase is the baseline: the phase's records translated as the door
// translates them, owned by the bench's member, and their envelopes' bytes
// through the raw path (a plain stream, fetch, one COPY a batch).
func (ob *otlpBed) rawPhase(ctx context.Context) (Throughput, error) {
	w := ob.workload("raw")
	var envs []*streams.Envelope
	for _, r := range w.requests() {
		more, err := translated(r)
		if err != nil {
			return Throughput{}, err
		}
		envs = append(envs, more...)
	}
	b, err := newBurst(envs)
	if err != nil {
		return Throughput{}, err
	}
	return runRawShaped(ctx, ob.tb, b, rawOTLPTuning, rawTelemetry)
}

// translated is a request's records as the door translates them, owned by
// the bench's member.
func translated(r *logsv1.LogsData) ([]*streams.Envelope, error) {
	owner := &streams.Owner{Org: benchOrg, Member: benchMember}
	var envs []*streams.Envelope
	for _, e := range telemetry.Events(r) {
		env, err := telemetry.Translate(e, time.Now())
		if err != nil {
			return nil, fmt.Errorf("translate: %w", err)
		}
		if env != nil {
			env.Owner = owner
			envs = append(envs, env)
		}
	}
	return envs, nil
}
