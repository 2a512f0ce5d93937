package library

import (
	"encoding/hex"
	"fmt"
	"strings"

	"lukechampine.com/blake3"
)

// DigestPrefix starts every digest's one textual form: "blake3:<64 hex>".
const DigestPrefix = "blake3:"

// Digest names content by its BLAKE3-256 hash.
func Digest(content []byte) string {
	sum := blake3.Sum256(content)
	return DigestPrefix + hex.EncodeToString(sum[:])
}

// ParseDigest checks that s is a digest in its one textual form.
func ParseDigest(s string) (string, error) {
	hexPart, ok := strings.CutPrefix(s, DigestPrefix)
	if !ok || len(hexPart) != 64 {
		return "", fmt.Errorf("digest %q: %w", clip(s), ErrBadDigest)
	}
	if _, err := hex.DecodeString(hexPart); err != nil || strings.ToLower(hexPart) != hexPart {
		return "", fmt.Errorf("digest %q: %w", clip(s), ErrBadDigest)
	}
	return s, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
