package bench

import "errors"

// ErrNotVerified is returned by callers that treat an unverified result as
// a failure: the projections did not hold exactly what was sent.
var ErrNotVerified = errors.New("bench: projections do not match what was sent")

// ErrInvalidConfig is wrapped by Config.validate's errors.
var ErrInvalidConfig = errors.New("bench: invalid configuration")

// ErrStalled is returned when a path stops committing before it has
// committed everything it was sent.
var ErrStalled = errors.New("bench: no progress")

// ErrPageUnbounded is returned by callers that treat an unverified UI
// result as a failure: the session's page held more or less than one page
// of each list.
var ErrPageUnbounded = errors.New("bench: the session page did not hold exactly one page of each list")
