package collect

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A last line without its newline is not a line yet: readLine gives the
// complete ones and then io.ErrUnexpectedEOF, consuming nothing the
// offset would move past.
func TestReadLineLeavesAPartialLine(t *testing.T) {
	br := bufio.NewReader(strings.NewReader("{\"a\":1}\n\n{\"b\":"))
	var got []string
	var n int
	for {
		l, err := readLine(br)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got, n = append(got, string(l.raw)), n+l.n
	}
	if len(got) != 2 || got[0] != "{\"a\":1}\n" || got[1] != "\n" || n != 9 {
		t.Fatalf("lines %q, %d bytes", got, n)
	}
}

// The state survives a save and a load, and a save replaces the file
// whole (no temporary file is left beside it).
func TestStateSavedAtomically(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spine", "state.json")
	st, err := loadState(path)
	if err != nil || len(st.Files) != 0 {
		t.Fatalf("missing state: %v %v", st, err)
	}
	st.Files["/a.jsonl"] = &fileState{Offset: 42, Lines: 3, ID: "1:2"}
	if err := st.save(path); err != nil {
		t.Fatal(err)
	}
	again, err := loadState(path)
	if err != nil || *again.Files["/a.jsonl"] != (fileState{Offset: 42, Lines: 3, ID: "1:2"}) {
		t.Fatalf("loaded %v %v", again, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("files beside the state: %v", entries)
	}
}
