package desktop

import "testing"

// A key nobody listens to any more is forgotten: session ids come and go.
func TestHubForgetsKeysNobodyListensTo(t *testing.T) {
	h := newHub()
	_, stop1 := h.listen(sessionKey("rs-1"))
	_, stop2 := h.listen(sessionKey("rs-1"))
	_, stop3 := h.listen(workKey("acme", "alice"))
	stop1()
	if len(h.subs) != 2 {
		t.Fatalf("keys with one listener left: %d, want 2", len(h.subs))
	}
	stop2()
	stop3()
	stop3() // twice is harmless
	if len(h.subs) != 0 {
		t.Fatalf("keys after every listener left: %v", h.subs)
	}
}
