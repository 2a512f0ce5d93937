package telemetry_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/spinehq/spine/telemetry"
	commonv1 "go.opentelemetry.io/proto/slim/otlp/common/v1"
	logsv1 "go.opentelemetry.io/proto/slim/otlp/logs/v1"
)

func TestAttrsConversion(t *testing.T) {
	kv := func(k string, v *commonv1.AnyValue) *commonv1.KeyValue { return &commonv1.KeyValue{Key: k, Value: v} }
	e := one(&logsv1.LogRecord{Attributes: []*commonv1.KeyValue{
		kv("s", strBody("x")),
		kv("b", &commonv1.AnyValue{Value: &commonv1.AnyValue_BoolValue{BoolValue: true}}),
		kv("i", &commonv1.AnyValue{Value: &commonv1.AnyValue_IntValue{IntValue: -7}}),
		kv("d", &commonv1.AnyValue{Value: &commonv1.AnyValue_DoubleValue{DoubleValue: 0.5}}),
		kv("y", &commonv1.AnyValue{Value: &commonv1.AnyValue_BytesValue{BytesValue: []byte{1}}}),
		kv("a", &commonv1.AnyValue{Value: &commonv1.AnyValue_ArrayValue{ArrayValue: &commonv1.ArrayValue{
			Values: []*commonv1.AnyValue{strBody("e"), {}}}}}),
		kv("m", &commonv1.AnyValue{Value: &commonv1.AnyValue_KvlistValue{KvlistValue: &commonv1.KeyValueList{
			Values: []*commonv1.KeyValue{kv("k", strBody("v"))}}}}),
		kv("empty map", &commonv1.AnyValue{Value: &commonv1.AnyValue_KvlistValue{KvlistValue: &commonv1.KeyValueList{}}}),
		kv("nil", nil),
		kv("twice", strBody("first")),
		kv("twice", strBody("last")),
	}})
	want := telemetry.Attrs{"s": "x", "b": true, "i": int64(-7), "d": 0.5, "y": []byte{1}, "a": []any{"e", nil},
		"m": telemetry.Attrs{"k": "v"}, "empty map": telemetry.Attrs{}, "nil": nil, "twice": "last"}
	if !reflect.DeepEqual(e.Attrs, want) {
		t.Fatalf("attrs %#v\nwant %#v", e.Attrs, want)
	}
}

func TestAttrsAccessors(t *testing.T) {
	a := telemetry.Attrs{"int": int64(38), "intstr": "38", "double": 38.0, "frac": 0.0131, "fracstr": "0.0131",
		"huge": math.MaxFloat64, "bool": true, "boolstr": "false", "word": "yes", "nan": "NaN", "neg": "-3"}
	ints := map[string]int64{"int": 38, "intstr": 38, "double": 38, "neg": -3}
	floats := map[string]float64{"int": 38, "intstr": 38, "double": 38, "frac": 0.0131, "fracstr": 0.0131, "huge": math.MaxFloat64, "neg": -3}
	bools := map[string]bool{"bool": true, "boolstr": false}
	for k := range a {
		n, ok := a.Int(k)
		if want, exp := ints[k]; ok != exp || n != want {
			t.Errorf("Int(%s) = %d, %v", k, n, ok)
		}
		f, ok := a.Float(k)
		if want, exp := floats[k]; ok != exp || f != want {
			t.Errorf("Float(%s) = %v, %v", k, f, ok)
		}
		b, ok := a.Bool(k)
		if want, exp := bools[k]; ok != exp || b != want {
			t.Errorf("Bool(%s) = %v, %v", k, b, ok)
		}
	}
	if s, ok := a.Str("word"); !ok || s != "yes" {
		t.Errorf("Str(word) = %q, %v", s, ok)
	}
	if _, ok := a.Str("int"); ok {
		t.Error("Str of an int")
	}
	if _, ok := telemetry.Attrs(nil).Int("x"); ok {
		t.Error("Int of nil attrs")
	}
}
