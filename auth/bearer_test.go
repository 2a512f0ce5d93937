package auth_test

import (
	"net/http/httptest"
	"testing"

	"github.com/spinehq/spine/auth"
)

func TestBearerToken(t *testing.T) {
	for _, c := range []struct {
		header string
		want   string
		ok     bool
	}{
		{"Bearer abc.def.ghi", "abc.def.ghi", true},
		{"bearer abc", "abc", true},
		{"BEARER abc", "abc", true},
		{"Bearer   abc  ", "abc", true},
		{"", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic YWRhOnB3", "", false},
		{"Bearerabc", "", false},
		{"Bearer abc def", "", false},
		{"Token abc", "", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		got, ok := auth.BearerToken(r)
		if got != c.want || ok != c.ok {
			t.Fatalf("%q: got (%q, %v), want (%q, %v)", c.header, got, ok, c.want, c.ok)
		}
	}
}
