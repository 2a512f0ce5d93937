package recorder

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// MaxLoadedChunks lets tests bound loadTranscripts.
var MaxLoadedChunks = &maxLoadedChunks

// SweepLockKey is the advisory lock a sweep holds.
var SweepLockKey = sweepLockKey

// HolesAfterSQL and InHoleSQL are the hole reads, for their plans.
var HolesAfterSQL, InHoleSQL = holesAfterSQL, inHoleSQL

// Pipelined wraps tx as a batch's transaction is (pipeTx): writes queued
// with queue wait for send, or for the next statement that goes through
// the returned transaction.
func Pipelined(tx pgx.Tx) (pgx.Tx, func(what, sql string, args ...any), func(context.Context) error) {
	t := &pipeTx{Tx: tx}
	return t, t.queue, t.send
}
