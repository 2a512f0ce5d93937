package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"

	logsv1 "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	metricsv1 "go.opentelemetry.io/proto/slim/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The bounds on what one export holds, counted before it is decoded. The
// byte bound (DefaultMaxBytes) does not bound the decoded size: an empty
// log record is two bytes of protobuf, three of JSON, and a couple of
// hundred bytes once decoded and flattened into an Event, so 8 MB of them
// made four million events. The exporters batch far below these (the
// OpenTelemetry SDKs send at most 512 records an export by default).
const (
	// MaxRecords bounds an export's log records, or its metric data
	// points.
	MaxRecords = 10_000
	// MaxValues bounds an export's values in all: every message
	// (resources, scopes, records, attributes and their values), and in
	// JSON every object and array element. 50 a record: a Claude Code
	// record has about 40.
	MaxValues = 50 * MaxRecords
	// maxDepth bounds how deep values nest, as protobuf's and protojson's
	// own recursion limit does.
	maxDepth = protowire.DefaultRecursionLimit
)

// records are the messages MaxRecords counts.
var records = map[protoreflect.FullName]bool{
	(&logsv1.LogRecord{}).ProtoReflect().Descriptor().FullName():                        true,
	(&metricsv1.NumberDataPoint{}).ProtoReflect().Descriptor().FullName():               true,
	(&metricsv1.HistogramDataPoint{}).ProtoReflect().Descriptor().FullName():            true,
	(&metricsv1.ExponentialHistogramDataPoint{}).ProtoReflect().Descriptor().FullName(): true,
	(&metricsv1.SummaryDataPoint{}).ProtoReflect().Descriptor().FullName():              true,
}

// tally counts an export's records and values as a body is scanned, and
// stops the scan past either bound.
type tally struct{ records, values int }

// add counts one value, of message md (nil: a value that is no message
// OTLP defines).
func (t *tally) add(md protoreflect.MessageDescriptor) error {
	t.values++
	if md != nil && records[md.FullName()] {
		t.records++
	}
	if t.records > MaxRecords || t.values > MaxValues {
		return ErrTooManyRecords
	}
	return nil
}

// bound scans b, a message md in format f, and refuses it (ErrTooManyRecords)
// when it holds more than the bounds allow, before anything of it is
// decoded. A body the scan cannot follow is ErrMalformed, as the decoder
// would say.
func bound(b []byte, f Format, md protoreflect.MessageDescriptor) error {
	t := &tally{}
	switch f {
	case Protobuf:
		return t.protobuf(b, md, 0)
	case JSON:
		err := (&jsonScan{b: b, t: t}).value(md, 0)
		if errors.Is(err, errJSONSyntax) || errors.Is(err, errJSONEnd) {
			return &MalformedError{Layer: "JSON", err: err}
		}
		return err
	}
	return ErrContentType
}

// protobuf counts the messages of b, a message md on the wire, walking
// only the fields md defines: the decoder drops the others unread.
func (t *tally) protobuf(b []byte, md protoreflect.MessageDescriptor, depth int) error {
	if depth > maxDepth {
		return &MalformedError{Layer: "protobuf", err: errTooDeep}
	}
	fields := md.Fields()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return &MalformedError{Layer: "protobuf", err: protowire.ParseError(n)}
		}
		b = b[n:]
		fd := fields.ByNumber(num)
		if fd == nil || fd.Kind() != protoreflect.MessageKind || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return &MalformedError{Layer: "protobuf", err: protowire.ParseError(n)}
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return &MalformedError{Layer: "protobuf", err: protowire.ParseError(n)}
		}
		if err := t.add(fd.Message()); err != nil {
			return err
		}
		if err := t.protobuf(v, fd.Message(), depth+1); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// jsonScan walks a JSON body without decoding it: only the keys are read
// (to know each value's message), the rest is skipped byte by byte. It is
// no validator: a body it cannot follow is malformed, and one it follows
// wrongly protojson refuses.
type jsonScan struct {
	b []byte
	i int
	t *tally
}

// value counts the next value, a message md (nil when it is no message
// OTLP defines there): each object is a value, and so is each element of
// an array.
func (s *jsonScan) value(md protoreflect.MessageDescriptor, depth int) error {
	if depth > maxDepth {
		return &MalformedError{Layer: "JSON", err: errTooDeep}
	}
	switch s.next() {
	case '{':
		s.i++
		if err := s.t.add(md); err != nil {
			return err
		}
		return s.object(md, depth)
	case '[':
		s.i++
		return s.array(md, depth)
	case '"':
		_, err := s.str(false)
		return err
	case 0:
		return errJSONEnd
	}
	for s.i < len(s.b) && !isDelim(s.b[s.i]) {
		s.i++ // a number, true, false or null
	}
	return nil
}

// isDelim: a byte that ends a number or a literal.
func isDelim(c byte) bool {
	switch c {
	case ',', ':', ']', '}', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// object counts an object's fields' values, up to its closing brace. A
// field is found by its JSON or its proto name, as protojson finds it.
func (s *jsonScan) object(md protoreflect.MessageDescriptor, depth int) error {
	if s.next() == '}' {
		s.i++
		return nil
	}
	for {
		if s.next() != '"' {
			return errJSONSyntax
		}
		key, err := s.str(md != nil)
		if err != nil {
			return err
		}
		if s.next() != ':' {
			return errJSONSyntax
		}
		s.i++
		if err := s.value(fieldMessage(md, key), depth+1); err != nil {
			return err
		}
		if done, err := s.after('}'); done || err != nil {
			return err
		}
	}
}

// array counts an array's elements, each of message md, up to its closing
// bracket.
func (s *jsonScan) array(md protoreflect.MessageDescriptor, depth int) error {
	if s.next() == ']' {
		s.i++
		return nil
	}
	for {
		if err := s.t.add(nil); err != nil {
			return err
		}
		if err := s.value(md, depth+1); err != nil {
			return err
		}
		if done, err := s.after(']'); done || err != nil {
			return err
		}
	}
}

// after reads what follows a member: a comma (more follow) or the closing
// delimiter (done).
func (s *jsonScan) after(closing byte) (bool, error) {
	switch s.next() {
	case ',':
		s.i++
		return false, nil
	case closing:
		s.i++
		return true, nil
	}
	return false, errJSONSyntax
}

// str reads a string, s.i at its opening quote, and gives its value when
// asked (a key of a message's field), unescaped ("log\u0052ecords" names
// logRecords to protojson, so to the scan as well).
func (s *jsonScan) str(want bool) (string, error) {
	start := s.i
	s.i++
	for {
		k := bytes.IndexAny(s.b[s.i:], `"\`)
		if k < 0 {
			return "", errJSONEnd
		}
		s.i += k
		if s.b[s.i] == '"' {
			break
		}
		s.i += 2 // an escape: the backslash and the character it escapes
		if s.i > len(s.b) {
			return "", errJSONEnd
		}
	}
	s.i++
	raw := s.b[start:s.i]
	if !want {
		return "", nil
	}
	if !bytes.ContainsRune(raw, '\\') {
		return string(raw[1 : len(raw)-1]), nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", errJSONSyntax
	}
	return v, nil
}

// next skips white space and peeks at the next byte, 0 at the end.
func (s *jsonScan) next() byte {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return c
		}
	}
	return 0
}

// fieldMessage is the message type of md's field named key, nil when the
// field is none md defines or holds no message.
func fieldMessage(md protoreflect.MessageDescriptor, key string) protoreflect.MessageDescriptor {
	if md == nil {
		return nil
	}
	fd := md.Fields().ByJSONName(key)
	if fd == nil {
		fd = md.Fields().ByTextName(key)
	}
	if fd == nil || fd.Kind() != protoreflect.MessageKind || fd.IsMap() {
		return nil
	}
	return fd.Message()
}
