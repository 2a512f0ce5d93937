package server

import (
	"testing"

	"github.com/spinehq/spine/streams"
)

// A member holds at most perMember streams and everyone at most total; a
// slot given back (once, however often release is called) is free again.
func TestStreamSlots(t *testing.T) {
	alice, bob := streams.Owner{Org: "acme", Member: "alice"}, streams.Owner{Org: "acme", Member: "bob"}
	c := newStreamSlots(2, 3)
	first, ok := c.take(alice)
	if !ok {
		t.Fatal("alice's first stream refused")
	}
	if _, ok := c.take(alice); !ok {
		t.Fatal("alice's second stream refused")
	}
	if _, ok := c.take(alice); ok {
		t.Fatal("alice's third stream taken past the cap of 2 a member")
	}
	if _, ok := c.take(bob); !ok {
		t.Fatal("bob's first stream refused")
	}
	if _, ok := c.take(bob); ok {
		t.Fatal("bob's second stream taken past the cap of 3 in all")
	}
	first()
	first() // a second release gives back nothing more
	if _, ok := c.take(bob); !ok {
		t.Fatal("bob's stream refused once alice gave one back")
	}
	if _, ok := c.take(alice); ok {
		t.Fatal("a stream taken past the cap of 3 in all after a double release")
	}
}
