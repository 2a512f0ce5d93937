package telemetry

import (
	"math"
	"strconv"

	commonv1 "go.opentelemetry.io/proto/slim/otlp/common/v1"
)

// Attrs are OTLP attributes as Go values, by key: string, bool, int64,
// float64, []byte, []any (an array), Attrs (a key-value list), or nil (a
// value with nothing set). Of a key given twice, the last one counts.
//
// The apps do not keep one type per attribute: Claude Code's
// api_request duration_ms is an int but its tool_result duration_ms the
// string "38"; Codex sends input_token_count as a string and
// cached_token_count as an int. The accessors read a number or a bool
// from whichever form it came in.
type Attrs map[string]any

// attrs converts OTLP key-values; nil for none.
func attrs(kvs []*commonv1.KeyValue) Attrs {
	if len(kvs) == 0 {
		return nil
	}
	a := make(Attrs, len(kvs))
	for _, kv := range kvs {
		a[kv.GetKey()] = value(kv.GetValue())
	}
	return a
}

// value converts one OTLP AnyValue.
func value(v *commonv1.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonv1.AnyValue_StringValue:
		return x.StringValue
	case *commonv1.AnyValue_BoolValue:
		return x.BoolValue
	case *commonv1.AnyValue_IntValue:
		return x.IntValue
	case *commonv1.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonv1.AnyValue_BytesValue:
		return x.BytesValue
	case *commonv1.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	case *commonv1.AnyValue_KvlistValue:
		return kvlist(x.KvlistValue.GetValues())
	}
	return nil
}

// kvlist is attrs, never nil: an empty key-value list is still a list.
func kvlist(kvs []*commonv1.KeyValue) Attrs {
	if a := attrs(kvs); a != nil {
		return a
	}
	return Attrs{}
}

// Str is a string attribute; ok is false when key is absent or not a
// string.
func (a Attrs) Str(key string) (s string, ok bool) {
	s, ok = a[key].(string)
	return s, ok
}

// Int is an integer attribute: an int, a double with no fraction, or a
// string of decimal digits ("38").
func (a Attrs) Int(key string) (int64, bool) {
	switch v := a[key].(type) {
	case int64:
		return v, true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) <= 1<<53 {
			return int64(v), true
		}
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// Float is a number attribute: a double, an int, or a string that parses
// as a finite number ("0.0131").
func (a Attrs) Float(key string) (float64, bool) {
	switch v := a[key].(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case string:
		f, err := strconv.ParseFloat(v, 64)
		if err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, true
		}
	}
	return 0, false
}

// Bool is a boolean attribute: a bool, or the string "true" or "false"
// (Claude Code's tool_result success).
func (a Attrs) Bool(key string) (bool, bool) {
	switch v := a[key].(type) {
	case bool:
		return v, true
	case string:
		switch v {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}
