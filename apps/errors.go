package apps

import "errors"

// ErrUnknownFormat: a source's format was not given and could not be told
// from its first values, or a format was named that spine does not know.
var ErrUnknownFormat = errors.New("unknown format")
