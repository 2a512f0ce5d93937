package telemetry

import (
	logsv1 "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	metricsv1 "go.opentelemetry.io/proto/slim/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// DecodeLogs decodes the body of an OTLP/HTTP POST to /v1/logs (an
// ExportLogsServiceRequest). It decodes into LogsData, the message OTLP
// defines for logs outside a request, which has the same field number and
// JSON name (resourceLogs) and so the same encoding (TestDataIsTheRequestsTwin).
// An empty body is an empty request.
func DecodeLogs(b []byte, f Format) (*logsv1.LogsData, error) {
	d := &logsv1.LogsData{}
	if err := decode(b, f, d); err != nil {
		return nil, err
	}
	if f == JSON {
		hexLogIDs(d)
	}
	return d, nil
}

// DecodeMetrics decodes the body of an OTLP/HTTP POST to /v1/metrics (an
// ExportMetricsServiceRequest) into MetricsData, its twin as LogsData is
// the logs request's.
func DecodeMetrics(b []byte, f Format) (*metricsv1.MetricsData, error) {
	d := &metricsv1.MetricsData{}
	if err := decode(b, f, d); err != nil {
		return nil, err
	}
	if f == JSON {
		hexMetricIDs(d)
	}
	return d, nil
}

// Unknown fields are dropped, not refused: a newer exporter's additions
// must not cost the events spine does understand.
var (
	protobufOptions = proto.UnmarshalOptions{DiscardUnknown: true}
	jsonOptions     = protojson.UnmarshalOptions{DiscardUnknown: true}
)

// decode fills m from b in format f, once b is known to be within the
// bounds (MaxRecords, MaxValues): they are counted before anything is
// decoded.
func decode(b []byte, f Format, m proto.Message) error {
	if len(b) == 0 {
		return nil
	}
	if err := bound(b, f, m.ProtoReflect().Descriptor()); err != nil {
		return err
	}
	switch f {
	case Protobuf:
		if err := protobufOptions.Unmarshal(b, m); err != nil {
			return &MalformedError{Layer: "protobuf", err: err}
		}
		return nil
	case JSON:
		return decodeJSON(b, m)
	}
	return ErrContentType
}

// decodeJSON is protojson, then, if protojson refuses the body, protojson
// again over the body relaxed (see relax): the strict pass costs nothing
// for the exporters that need no leniency.
func decodeJSON(b []byte, m proto.Message) error {
	err := jsonOptions.Unmarshal(b, m)
	if err == nil {
		return nil
	}
	relaxed, ok := relax(b, m.ProtoReflect().Descriptor())
	if !ok {
		return &MalformedError{Layer: "JSON", err: err}
	}
	proto.Reset(m)
	if err := jsonOptions.Unmarshal(relaxed, m); err != nil {
		return &MalformedError{Layer: "JSON", err: err}
	}
	return nil
}
