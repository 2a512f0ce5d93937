package auth

import "errors"

// Errors Verify returns (wrapped); a caller answers every one of them with 401.
var (
	ErrMalformed   = errors.New("malformed token")
	ErrAlgorithm   = errors.New("unsupported token algorithm")
	ErrSignature   = errors.New("invalid token signature")
	ErrExpired     = errors.New("token expired")
	ErrNotYetValid = errors.New("token not yet valid")
	ErrAudience    = errors.New("wrong token audience")
)

// Errors from minting and from secret handling.
var (
	ErrClaims       = errors.New("invalid claims")
	ErrShortSecret  = errors.New("token secret shorter than 32 bytes")
	ErrSecretNotHex = errors.New("token secret is not hex")
)
