package trace

import "errors"

// ErrNotFound: nothing the caller may see references this id. A file that
// exists but only in another member's artifacts answers the same.
var ErrNotFound = errors.New("nothing to trace")
