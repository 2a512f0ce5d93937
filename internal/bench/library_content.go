package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// fixtures finds the real transcripts: every *.jsonl and *.json under dir,
// or, when dir is "", under ../shared/fixtures beside the directory holding
// go.mod above the working directory. When there are none it says why.
func fixtures(dir string) (root string, paths []string, reason string) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", nil, fmt.Sprintf("working directory: %v", err)
		}
		mod, ok := moduleRoot(wd)
		if !ok {
			return "", nil, fmt.Sprintf("no go.mod in %s or above it, so no ../shared/fixtures", wd)
		}
		dir = filepath.Join(mod, "..", "shared", "fixtures")
	}
	root = filepath.Clean(dir)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(path); d.Type().IsRegular() && (ext == ".jsonl" || ext == ".json") {
			paths = append(paths, path)
		}
		return nil
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return root, nil, fmt.Sprintf("%s does not exist", root)
	case err != nil:
		return root, nil, fmt.Sprintf("reading %s: %v", root, err)
	case len(paths) == 0:
		return root, nil, fmt.Sprintf("no *.jsonl or *.json files under %s", root)
	}
	slices.Sort(paths)
	return root, paths, ""
}

// moduleRoot walks up from dir to the directory holding go.mod.
func moduleRoot(dir string) (string, bool) {
	for {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && st.Mode().IsRegular() {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// textCorpus returns the lines text content is drawn from, and says what
// they are: the lines of the fixture transcripts, or generated JSON lines
// when there are none.
func textCorpus(dir string) ([][]byte, string) {
	root, paths, reason := fixtures(dir)
	var lines [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // counted as missing by the transcripts phase
		}
		for line := range bytes.SplitSeq(b, []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 {
				lines = append(lines, line)
			}
		}
	}
	const header = `text: a distinct header line, then lines drawn at random, digits redrawn, from `
	if len(lines) > 0 {
		return lines, fmt.Sprintf(header+"the %d lines of the %d transcripts under %s", len(lines), len(paths), root)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 256 {
		lines = append(lines, fmt.Appendf(nil, `{"type":"assistant","message":{"content":%q}}`,
			randomText(rng, 40+rng.IntN(400))))
	}
	if reason == "" {
		reason = "the fixtures could not be read"
	}
	return lines, fmt.Sprintf(header+"%d generated JSON lines (%s)", len(lines), strings.TrimSuffix(reason, "."))
}

// textContent is file seq of size bytes: a header line naming seq, so no
// two files share a digest, then corpus lines chosen by a generator
// seeded with seq, their digits drawn afresh (timestamps, ids and counts
// differ from line to line as in a real transcript; without that, a 1 MiB
// piece of a few hundred repeated lines compresses 18×, real transcripts
// about 5×).
func textContent(corpus [][]byte, seq, size int) []byte {
	rng := rand.New(rand.NewPCG(uint64(seq), uint64(size)))
	b := make([]byte, 0, size+64<<10)
	b = fmt.Appendf(b, "{\"bench\":%d}\n", seq)
	for len(b) < size {
		for _, c := range corpus[rng.IntN(len(corpus))] {
			if c >= '0' && c <= '9' {
				c = '0' + byte(rng.IntN(10))
			}
			b = append(b, c)
		}
		b = append(b, '\n')
	}
	return b[:size]
}

// randomContent is file seq of size bytes of ChaCha8 output: nothing
// compresses it.
func randomContent(seq, size int) []byte {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(seq))
	binary.LittleEndian.PutUint64(seed[8:], uint64(size))
	b := make([]byte, size)
	_, _ = rand.NewChaCha8(seed).Read(b) // never fails
	return b
}
