package collect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"unicode/utf8"

	"github.com/spinehq/spine/apps"
)

// tail is one file being followed: how far it was read, and its
// translation stream, which lives as long as the file does.
type tail struct {
	path   string
	id     string // fileID when opened
	size   int64  // at the last stat
	offset int64  // after the last complete line read
	lines  int    // lines before offset
	stream *apps.Stream
	log    *slog.Logger
	// cut is set when the file was found shorter than offset or with
	// another identity: it is read again from the start.
	cut bool
}

// restat notes the file's size and identity now.
func (t *tail) restat() error {
	fi, err := os.Stat(t.path)
	if err != nil {
		return err
	}
	t.size = fi.Size()
	t.cut = t.size < t.offset || fileID(fi) != t.id
	return nil
}

// rewritten reports what restat found: the file was cut or replaced.
func (t *tail) rewritten() bool { return t.cut }

// read translates the complete lines between offset and limit. A last
// line without its newline waits: the app is still writing it.
func (t *tail) read(ctx context.Context, limit int64) error {
	if limit <= t.offset {
		return nil
	}
	f, err := os.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // gone: the next pass forgets it
	}
	if err != nil {
		t.log.Warn("file cannot be read: trying again on the next pass", "file", t.path, "err", err)
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return fmt.Errorf("read %s: %w", t.path, err)
	}
	br := bufio.NewReaderSize(io.LimitReader(f, limit-t.offset), 1<<20)
	for {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil // the end, or a partial line that waits
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", t.path, err)
		}
		t.offset += int64(line.n)
		t.lines++
		if err := t.record(ctx, line); err != nil {
			return err
		}
	}
}

// record translates one line, as `spine import` reads it (apps'
// JSON-lines reader): blank lines pass, bytes that are not UTF-8 are
// replaced, malformed JSON and overlong lines are skipped and reported.
func (t *tail) record(ctx context.Context, line rawLine) error {
	if line.tooLong {
		t.log.Info("line skipped", "file", t.path, "line", t.lines, "reason", fmt.Sprintf("line longer than %d bytes", apps.MaxLineBytes))
		return nil
	}
	data := bytes.TrimSpace(line.raw)
	if len(data) == 0 {
		return nil
	}
	rec := apps.Record{N: t.lines, Data: data}
	if !utf8.Valid(data) {
		rec.Data, rec.Repaired = bytes.ToValidUTF8(data, []byte("\uFFFD")), true
	}
	if !json.Valid(rec.Data) {
		t.log.Info("line skipped", "file", t.path, "line", t.lines, "reason", "malformed JSON")
		return nil
	}
	skip, err := t.stream.Record(ctx, rec)
	if skip != "" {
		t.log.Info("line skipped", "file", t.path, "line", t.lines, "reason", skip)
	}
	return err
}

// rawLine is one complete line as read, its newline included.
type rawLine struct {
	raw     []byte
	n       int  // bytes read, newline included: the offset moves past them
	tooLong bool // longer than apps.MaxLineBytes: raw is nil, never held whole
}

// readLine reads up to and including the next newline. io.ErrUnexpectedEOF
// means a last line without its newline, left for the next read.
func readLine(br *bufio.Reader) (rawLine, error) {
	var buf []byte
	var n int
	for {
		frag, err := br.ReadSlice('\n')
		n += len(frag)
		if n <= apps.MaxLineBytes {
			buf = append(buf, frag...)
		} else {
			buf = nil
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
			if n > apps.MaxLineBytes {
				return rawLine{n: n, tooLong: true}, nil
			}
			return rawLine{raw: buf, n: n}, nil
		case errors.Is(err, io.EOF) && n > 0:
			return rawLine{}, io.ErrUnexpectedEOF
		default:
			return rawLine{}, err
		}
	}
}

// lastLineEnd is the offset just past the last newline between offset and
// the size restat or open found: where reading the complete lines the
// file gained stops (a last line without its newline waits).
func (t *tail) lastLineEnd() (int64, error) {
	if t.size <= t.offset {
		return t.offset, nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for end := t.size; end > t.offset; {
		start := max(t.offset, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return t.offset, nil
}
