package members

import "errors"

// Errors of a mapping request; each is the caller's (HTTP 400 or 404).
var (
	// ErrKind: a kind other than email, account or user.
	ErrKind = errors.New("kind is not email, account or user")
	// ErrValue: an empty value, or one over MaxValueLen bytes, not UTF-8
	// or holding a control character.
	ErrValue = errors.New("value is empty, too long, not UTF-8 or holds a control character")
	// ErrMember: not a member id (1-128 letters, digits, - _ . @).
	ErrMember = errors.New("member is not a member id (1-128 letters, digits, '-', '_', '.' or '@')")
	// ErrNotMapped: Unmap of an identity no mapping names.
	ErrNotMapped = errors.New("identity is not mapped")
)
