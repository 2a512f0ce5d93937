package members

import "errors"

// Errors of a mapping request; each is the caller's (HTTP 400 or 404).
var (
	// ErrKind: a kind other than email, account or user.
	ErrKind = errors.New("kind is not email, account or user")
	// ErrValue: an empty value, or one over MaxValueLen bytes or not UTF-8.
	ErrValue = errors.New("value is empty, not UTF-8 or too long")
	// ErrMember: not a member id (1-128 letters, digits, - _ . @).
	ErrMember = errors.New("member is not a member id (1-128 letters, digits, '-', '_', '.' or '@')")
	// ErrNotMapped: Unmap of an identity no mapping names.
	ErrNotMapped = errors.New("identity is not mapped")
)
