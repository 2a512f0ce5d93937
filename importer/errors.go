package importer

import "errors"

// Sentinel errors.
var (
	// ErrWrongApp: a file's format belongs to another app than --app named.
	ErrWrongApp = errors.New("format belongs to another app")
	// ErrBadOption: an Options field has a value outside its set.
	ErrBadOption = errors.New("bad option")
)
