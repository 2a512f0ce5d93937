package telemetry

import (
	"bytes"
	"encoding/json"
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// relax rewrites a JSON body protojson refused into one it takes, where
// the body says something the spec's JSON mapping does not allow but real
// exporters send:
//
//   - a scalar given as an object or array, {"doubleValue":{}} (an exporter
//     that had no number to give), is dropped: the field is unset;
//   - a bool given as the string "true" or "false" is that bool.
//
// protojson itself already takes integers as JSON numbers or strings
// (Claude Code sends numbers, Codex strings), enum names or numbers, null
// for "unset", and field names in lowerCamelCase or snake_case. The walk
// follows the message's descriptor, so only fields OTLP defines are
// touched; ok is false when the body is not a JSON object at all.
func relax(b []byte, md protoreflect.MessageDescriptor) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers stay as written: an int64 must not pass through float64
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || dec.More() {
		return nil, false
	}
	relaxMessage(obj, md)
	out, err := json.Marshal(obj)
	return out, err == nil
}

// relaxMessage relaxes each field of obj that md defines, dropping those
// that cannot be mended.
func relaxMessage(obj map[string]any, md protoreflect.MessageDescriptor) {
	fields := md.Fields()
	for k, v := range obj {
		fd := fields.ByJSONName(k)
		if fd == nil {
			fd = fields.ByTextName(k)
		}
		if fd == nil || fd.IsMap() {
			continue
		}
		if nv, ok := relaxField(fd, v); ok {
			obj[k] = nv
		} else {
			delete(obj, k)
		}
	}
}

// relaxField relaxes one field's value; a list keeps the elements that
// can be mended.
func relaxField(fd protoreflect.FieldDescriptor, v any) (any, bool) {
	if v == nil || !fd.IsList() {
		return relaxValue(fd, v)
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	kept := list[:0]
	for _, e := range list {
		if e, ok := relaxValue(fd, e); ok {
			kept = append(kept, e)
		}
	}
	return kept, true
}

// relaxValue relaxes one value of field fd.
func relaxValue(fd protoreflect.FieldDescriptor, v any) (any, bool) {
	if v == nil {
		return nil, true
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		obj, ok := v.(map[string]any)
		if ok {
			relaxMessage(obj, fd.Message())
		}
		return obj, ok
	case protoreflect.BoolKind:
		if s, ok := v.(string); ok {
			b, err := strconv.ParseBool(s)
			return b, err == nil
		}
	}
	switch v.(type) {
	case map[string]any, []any:
		return nil, false
	}
	return v, true
}
