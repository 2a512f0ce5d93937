package collect

import "errors"

// ErrBadOption is an Options value New cannot work with.
var ErrBadOption = errors.New("bad option")

// ErrStateLocked is a state file another collector holds.
var ErrStateLocked = errors.New("state file in use")
