package collect

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/spinehq/spine/internal/config"
)

// fileState is how far one file has been read and sent: every line before
// Offset was translated and its envelopes accepted by spine.
type fileState struct {
	Offset int64 `json:"offset"`
	// Lines is the number of lines before Offset, so line numbers in
	// reports match the file's.
	Lines int `json:"lines"`
	// ID tells the file from another one later written under its name
	// (device and inode where the system has them); "" when unknown.
	ID string `json:"id,omitempty"`
}

// state is the collector's durable memory: per file, how far it got, and
// the order in which the files' lines were fed to the translation.
type state struct {
	Version int                   `json:"version"`
	Files   map[string]*fileState `json:"files"`
	// Order is every range of lines fed, in the order fed: one session can
	// span files (a transcript and its subagents'), and its chunks' seq
	// numbers, so their ids and the point spine resumes after, follow the
	// order its lines were read. A restart feeds the files again in this
	// order. It is saved before the lines are sent, so it may run past
	// Files' offsets: what lies past them is sent again (spine passes over
	// what it has). Empty in a state written before it existed: the files
	// are then fed in name order.
	Order []segment `json:"order,omitempty"`
	// Ending are the spine sessions the collector ended as idle whose end
	// spine accepted but may not have recorded yet: a restart waits for
	// those ends before it asks spine where each session stands, so that
	// nothing more is sent to a session already ended.
	Ending []string `json:"ending,omitempty"`
}

// segment is one range of a file's lines fed in one go: from where the
// previous segment of the file ended up to End.
type segment struct {
	File string `json:"file"`
	End  int64  `json:"end"`
}

// fed appends a segment to the order, merged into the last one when it is
// the same file's.
func (st *state) fed(file string, end int64) {
	if n := len(st.Order); n > 0 && st.Order[n-1].File == file {
		st.Order[n-1].End = end
		return
	}
	st.Order = append(st.Order, segment{File: file, End: end})
}

// drop removes a file's segments from the order.
func (st *state) drop(file string) {
	st.Order = slices.DeleteFunc(st.Order, func(s segment) bool { return s.File == file })
}

const stateVersion = 1

// loadState reads the state file; a missing file is an empty state.
func loadState(path string) (*state, error) {
	st := &state{Version: stateVersion, Files: map[string]*fileState{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("read state %s: version %d, want %d", path, st.Version, stateVersion)
	}
	if st.Files == nil {
		st.Files = map[string]*fileState{}
	}
	return st, nil
}

// save writes the state atomically: a crash leaves the old state or the
// new one, never half of either.
func (st *state) save(path string) error {
	data, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("save state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

// DefaultStatePath is where the state lives unless Options.StatePath says:
// collect-state.json in spine's directory under the user's config dir.
func DefaultStatePath() (string, error) {
	dir, err := config.Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "collect-state.json"), nil
}
