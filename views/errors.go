package views

import "errors"

// ErrBadCursor is a page cursor that is not one a page handed out.
var ErrBadCursor = errors.New("not a page cursor")
