package importer

import "errors"

// Sentinel errors.
var (
	// ErrUnknownFormat: a file's format was not given and could not be told
	// from its first values, or --format named no format spine knows.
	ErrUnknownFormat = errors.New("unknown format")
	// ErrWrongApp: a file's format belongs to another app than --app named.
	ErrWrongApp = errors.New("format belongs to another app")
	// ErrBadOption: an Options field has a value outside its set.
	ErrBadOption = errors.New("bad option")
)
