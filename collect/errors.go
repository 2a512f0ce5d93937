package collect

import "errors"

// ErrBadOption is an Options value New cannot work with.
var ErrBadOption = errors.New("bad option")
