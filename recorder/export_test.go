package recorder

// MaxLoadedChunks lets tests bound loadTranscripts.
var MaxLoadedChunks = &maxLoadedChunks

// SweepLockKey is the advisory lock a sweep holds.
var SweepLockKey = sweepLockKey

// HolesAfterSQL and InHoleSQL are the hole reads, for their plans.
var HolesAfterSQL, InHoleSQL = holesAfterSQL, inHoleSQL
