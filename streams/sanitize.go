package streams

import (
	"encoding/json"
	"reflect"
	"strings"
)

// PostgreSQL's text and jsonb cannot hold U+0000, and a row that cannot be
// written would be retried forever. JSON can carry it ("\u0000"), so Decode
// replaces it with U+FFFD everywhere in the envelope, raw reports included.

const nul = "\x00"

// sanitize replaces NUL in every string the envelope holds.
func sanitize(e *Envelope) {
	scrub(reflect.ValueOf(e).Elem())
}

// Scrub replaces NUL in every string v points to (json.RawMessage
// included): other packages' messages get the envelope's rule.
func Scrub(v any) { scrub(reflect.ValueOf(v)) }

var rawType = reflect.TypeOf(json.RawMessage(nil))

func scrub(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if strings.Contains(v.String(), nul) {
			v.SetString(strings.ReplaceAll(v.String(), nul, "\uFFFD"))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			scrub(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				scrub(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type() == rawType {
			v.SetBytes(ScrubJSON(v.Bytes()))
			return
		}
		for i := 0; i < v.Len(); i++ {
			scrub(v.Index(i))
		}
	}
}
