package jsonfields

import (
	"reflect"
	"slices"
	"testing"
)

type inner struct {
	Name  string   `json:"name"`
	Names []string `json:"names"`
}

type skipped struct{ Raw string }

type outer struct {
	A      string            `json:"a"`
	B      *string           `json:"b,omitempty"`
	C      []string          `json:"c"`
	N      int               `json:"n"`
	In     *inner            `json:"in"`
	List   []inner           `json:"list"`
	Skip   skipped           `json:"skip"`
	Hidden string            `json:"-"`
	Bytes  []byte            `json:"bytes"`
	M      map[string]string `json:"m"`
}

// Strings, *string and []string are all listed, nested ones by path;
// skipped types, ignored fields and bytes are not.
func TestStrings(t *testing.T) {
	got := Strings(reflect.TypeFor[outer](), reflect.TypeFor[skipped]())
	want := []string{"a", "b", "c", "in.name", "in.names", "list.name", "list.names"}
	if !slices.Equal(got, want) {
		t.Fatalf("Strings = %q, want %q", got, want)
	}
}
