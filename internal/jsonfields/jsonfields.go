// Package jsonfields lists the string fields of a JSON message type, for
// the tests that hold every one of them to a bound: a field added without
// a bound fails those tests.
package jsonfields

import (
	"reflect"
	"strings"
)

// Strings lists the JSON paths ("runner.apps", "events.text") of t's
// fields that carry strings: string, *string and []string. It follows
// fields that are structs of t's own package (directly, by pointer or in
// a slice), except the types in skip.
func Strings(t reflect.Type, skip ...reflect.Type) []string {
	return walk(t, "", t.PkgPath(), skip)
}

func walk(t reflect.Type, prefix, pkg string, skip []reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.String:
			out = append(out, prefix+name)
		case ft.Kind() == reflect.Struct && ft.PkgPath() == pkg && !contains(skip, ft):
			out = append(out, walk(ft, prefix+name+".", pkg, skip)...)
		}
	}
	return out
}

func contains(ts []reflect.Type, t reflect.Type) bool {
	for _, s := range ts {
		if s == t {
			return true
		}
	}
	return false
}
