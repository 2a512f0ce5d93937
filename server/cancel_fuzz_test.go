package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzCancelBody: any body of a cancel is either read (nothing, or one
// {"reason"} object) or refused with a 4xx and a code; it never panics.
func FuzzCancelBody(f *testing.F) {
	for _, seed := range []string{``, ` `, `{}`, `{"reason":"wrong branch"}`, `{"reason":5}`, `{"why":"x"}`,
		`{"reason":"a"} {}`, `[`, `null`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/sessions/s1/cancel", bytes.NewReader(body))
		req, ok := readCancel(w, r)
		if ok {
			if w.Code != http.StatusOK || w.Body.Len() != 0 {
				t.Fatalf("read %+v but answered %d %s", req, w.Code, w.Body)
			}
			return
		}
		var eb ErrorBody
		if w.Code < 400 || w.Code > 499 || json.Unmarshal(w.Body.Bytes(), &eb) != nil || eb.Error.Code == "" {
			t.Fatalf("refused %q with %d %s", body, w.Code, w.Body)
		}
	})
}
