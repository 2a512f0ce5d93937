package server

import (
	"sync"
	"time"

	"github.com/spinehq/spine/streams"
)

// Caps on open page streams (docs/limits.md): each holds a connection, a
// goroutine and a poll of PostgreSQL every second or two, so one member's
// tabs, or everyone's, cannot hold the process. A page refused one reloads
// itself after streamRetry instead (spine.js), as it does without script.
const (
	MaxPageStreamsPerMember = 8
	MaxPageStreams          = 1000
	streamRetry             = 30 * time.Second
)

// streamSlots counts the open page streams, by member and in all.
type streamSlots struct {
	mu        sync.Mutex
	perMember int
	total     int
	open      int
	byMember  map[streams.Owner]int
}

func newStreamSlots(perMember, total int) *streamSlots {
	return &streamSlots{perMember: perMember, total: total, byMember: map[streams.Owner]int{}}
}

// take holds a slot for the member's stream, or reports that the caps are
// reached; release gives it back.
func (c *streamSlots) take(member streams.Owner) (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open >= c.total || c.byMember[member] >= c.perMember {
		return nil, false
	}
	c.open++
	c.byMember[member]++
	var once sync.Once
	return func() { once.Do(func() { c.give(member) }) }, true
}

func (c *streamSlots) give(member streams.Owner) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open--
	if c.byMember[member]--; c.byMember[member] == 0 {
		delete(c.byMember, member)
	}
}
