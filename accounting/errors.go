package accounting

import "errors"

// ErrNotFound is returned for a plan the caller's org has neither a budget
// nor a call for.
var ErrNotFound = errors.New("not found")

// ErrBadQuery is wrapped by errors in report parameters (a bad groupBy, a
// time that does not parse, from after to).
var ErrBadQuery = errors.New("bad report query")
