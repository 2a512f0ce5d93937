package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// DecodeSecret decodes a hex secret, such as the value of SPINE_TOKEN_SECRET
// or the contents of a secret file, and checks its length. Surrounding
// whitespace is ignored.
func DecodeSecret(text string) ([]byte, error) {
	secret, err := hex.DecodeString(string(bytes.TrimSpace([]byte(text))))
	if err != nil {
		// hex's own error would quote a byte of the secret.
		return nil, fmt.Errorf("decode secret: %w", ErrSecretNotHex)
	}
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("decode secret: %w", ErrShortSecret)
	}
	return secret, nil
}

// LoadOrCreateSecret returns the hex secret stored at path. If there is no
// file, it creates one holding 32 random bytes (mode 0600, missing parent
// directories 0700). Two processes racing to create it end up with the same
// secret: the file appears whole, and only once.
func LoadOrCreateSecret(path string) ([]byte, error) {
	secret, err := loadSecret(path)
	if errors.Is(err, fs.ErrNotExist) {
		secret, err = createSecret(path)
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", path, err)
	}
	return secret, nil
}

// LoadSecret returns the hex secret stored at path and never creates one:
// a missing file is an error wrapping fs.ErrNotExist.
func LoadSecret(path string) ([]byte, error) {
	secret, err := loadSecret(path)
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", path, err)
	}
	return secret, nil
}

func loadSecret(path string) ([]byte, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeSecret(string(text))
}

// createSecret writes a new secret to a temporary file and hard-links it into
// place, which fails if path exists; the loser of a race reads the winner's.
func createSecret(path string) ([]byte, error) {
	secret := make([]byte, MinSecretLen)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create dir: %w", err)
	}
	tmp, err := writeTemp(path, hex.EncodeToString(secret)+"\n")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	if errors.Is(err, fs.ErrExist) {
		return loadSecret(path)
	}
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	return secret, nil
}

// writeTemp writes text to a new 0600 file beside path, synced, and returns its name.
func writeTemp(path, text string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return "", fmt.Errorf("create temp: %w", err)
	}
	_, err = f.WriteString(text)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write temp: %w", err)
	}
	return f.Name(), nil
}
