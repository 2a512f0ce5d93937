package auth_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spinehq/spine/auth"
)

func TestLoadOrCreateSecretCreates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "nested")
	path := filepath.Join(dir, "token.secret")
	secret, err := auth.LoadOrCreateSecret(path)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if len(secret) != 32 {
		t.Fatalf("secret has %d bytes, want 32", len(secret))
	}
	assertMode(t, path, 0o600)
	assertMode(t, dir, 0o700)
	text, _ := os.ReadFile(path)
	if strings.TrimSpace(string(text)) != hex.EncodeToString(secret) {
		t.Fatalf("file does not hold the secret in hex")
	}
	again, err := auth.LoadOrCreateSecret(path)
	if err != nil || !bytes.Equal(again, secret) {
		t.Fatalf("second load: err %v, same secret %v", err, bytes.Equal(again, secret))
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".token.secret-*")); len(leftovers) > 0 {
		t.Fatalf("temporary files left behind: %v", leftovers)
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Fatalf("%s: mode %o, want %o", path, got, want)
	}
}

func TestLoadOrCreateSecretReadsExisting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token.secret")
	want := bytes.Repeat([]byte{0xab}, 48)
	os.WriteFile(path, []byte("  "+hex.EncodeToString(want)+"\n\n"), 0o600)
	got, err := auth.LoadOrCreateSecret(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got %x, %v; want %x", got, err, want)
	}
}

func TestLoadOrCreateSecretRefusesBadFiles(t *testing.T) {
	for name, c := range map[string]struct {
		text string
		want error
	}{
		"not hex":   {"zz-the-secret-itself-zz", auth.ErrSecretNotHex},
		"too short": {hex.EncodeToString(make([]byte, 16)), auth.ErrShortSecret},
		"empty":     {"", auth.ErrShortSecret},
	} {
		path := filepath.Join(t.TempDir(), "token.secret")
		os.WriteFile(path, []byte(c.text), 0o600)
		_, err := auth.LoadOrCreateSecret(path)
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: err = %v, want %v", name, err, c.want)
		}
		if c.text != "" && strings.Contains(err.Error(), c.text) {
			t.Fatalf("%s: error quotes the file: %v", name, err)
		}
	}
}

// Processes that start together and race to create the secret agree on it.
func TestLoadOrCreateSecretRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d", "token.secret")
	const n = 8
	secrets := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := auth.LoadOrCreateSecret(path)
			if err != nil {
				t.Errorf("racer %d: %v", i, err)
			}
			secrets[i] = s
		})
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if !bytes.Equal(secrets[i], secrets[0]) {
			t.Fatalf("racer %d got a different secret", i)
		}
	}
}

func TestDecodeSecret(t *testing.T) {
	hexed := strings.Repeat("0f", 32)
	if s, err := auth.DecodeSecret(hexed); err != nil || len(s) != 32 {
		t.Fatalf("64 hex chars: %d bytes, %v", len(s), err)
	}
	if _, err := auth.DecodeSecret(hexed[:62]); !errors.Is(err, auth.ErrShortSecret) {
		t.Fatalf("62 hex chars: err = %v, want ErrShortSecret", err)
	}
}
