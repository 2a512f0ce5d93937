package library

import "errors"

var (
	// ErrBadDigest: not "blake3:" followed by 64 lowercase hex digits.
	ErrBadDigest = errors.New("malformed digest")
	// ErrNotFound: no blob has this digest.
	ErrNotFound = errors.New("blob not found")
	// ErrCorrupt: stored bytes do not hash to their digest.
	ErrCorrupt = errors.New("blob does not match its digest")
)

// ErrRange: a read outside the file.
var ErrRange = errors.New("range outside the file")
