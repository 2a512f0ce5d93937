package apps

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/spinehq/spine/internal/fastjson"
)

// MaxLineBytes bounds one input line (or one element of a JSON document).
// A longer line is skipped and reported; memory never grows past it.
const MaxLineBytes = 64 << 20

// Record is one JSON value of an app's output: a line of a JSON-lines
// file, or an element of a pretty-printed document or array.
type Record struct {
	N        int // line number (JSON lines) or element number (documents), from 1
	Data     []byte
	Repaired bool // invalid UTF-8 replaced with U+FFFD
	// At is when a live source's record was read (zero for files): the
	// time of a record that carries none of its own.
	At time.Time
}

// RecordReader yields the records of one file, one at a time.
type RecordReader interface {
	Next() (Record, error) // io.EOF at the end; *LineError to skip one record
}

// LineError is a record that cannot be read; the rest of the file goes on.
type LineError struct {
	N      int
	Reason string
	Fatal  bool // the reader cannot resynchronise: the rest of the file is lost
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.N, e.Reason) }

// NewRecordReader picks JSON lines or a JSON document by the file's first
// bytes: a '[' or a first line that is not a whole JSON value means a
// pretty-printed document, read value by value with a streaming decoder.
func NewRecordReader(r *bufio.Reader) RecordReader {
	head, _ := r.Peek(64 << 10)
	trimmed := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return &docReader{dec: json.NewDecoder(r), array: true}
	}
	first, _, _ := bytes.Cut(trimmed, []byte("\n"))
	if len(trimmed) > 0 && trimmed[0] == '{' && !json.Valid(bytes.TrimSpace(first)) && !bytes.Contains(trimmed, []byte("\n{")) {
		return &docReader{dec: json.NewDecoder(r)}
	}
	return &lineReader{r: r}
}

// NewLineReader reads JSON lines, each record as soon as its line is
// complete: for an app's output read while it runs, where
// NewRecordReader's look ahead would wait for 64 KiB or the end.
func NewLineReader(r *bufio.Reader) RecordReader { return &lineReader{r: r} }

// lineReader reads JSON lines with a bounded buffer.
type lineReader struct {
	r   *bufio.Reader
	n   int
	buf []byte
}

func (l *lineReader) Next() (Record, error) {
	for {
		line, tooLong, err := l.read()
		if err != nil && len(line) == 0 && !tooLong {
			return Record{}, err
		}
		l.n++
		if tooLong {
			return Record{}, &LineError{N: l.n, Reason: fmt.Sprintf("line longer than %d bytes", MaxLineBytes)}
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			if err != nil {
				return Record{}, err
			}
			continue
		}
		rec := Record{N: l.n, Data: line}
		if !utf8.Valid(line) {
			rec.Data, rec.Repaired = bytes.ToValidUTF8(line, []byte("\uFFFD")), true
		}
		if !fastjson.Valid(rec.Data) {
			reason := "malformed JSON"
			if err == io.EOF {
				reason = "malformed JSON (truncated last line)"
			}
			return Record{}, &LineError{N: l.n, Reason: reason}
		}
		return rec, nil
	}
}

// read returns the next line without its newline. A line over MaxLineBytes
// is consumed and dropped (tooLong), never held whole.
func (l *lineReader) read() (line []byte, tooLong bool, err error) {
	l.buf = l.buf[:0]
	for {
		frag, err := l.r.ReadSlice('\n')
		if !tooLong {
			if len(l.buf)+len(frag) > MaxLineBytes {
				tooLong, l.buf = true, l.buf[:0]
			} else {
				l.buf = append(l.buf, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return nil, true, err
		}
		return l.buf, false, err
	}
}

// docReader reads a pretty-printed JSON value, or the elements of a JSON
// array, one at a time. A syntax error ends the file: a decoder cannot find
// the next value after one it could not parse.
type docReader struct {
	dec     *json.Decoder
	array   bool
	opened  bool
	n       int
	stopped bool
}

func (d *docReader) Next() (Record, error) {
	if d.stopped {
		return Record{}, io.EOF
	}
	if d.array && !d.opened {
		d.opened = true
		if _, err := d.dec.Token(); err != nil {
			return Record{}, d.fail("malformed JSON array")
		}
	}
	if d.array && !d.dec.More() {
		d.stopped = true
		return Record{}, io.EOF
	}
	var raw json.RawMessage
	err := d.dec.Decode(&raw)
	if err == io.EOF && !d.array {
		return Record{}, io.EOF
	}
	d.n++
	if err != nil {
		return Record{}, d.fail(fmt.Sprintf("malformed JSON (%v); the rest of the document is skipped", err))
	}
	if len(raw) > MaxLineBytes {
		return Record{}, &LineError{N: d.n, Reason: fmt.Sprintf("value longer than %d bytes", MaxLineBytes)}
	}
	rec := Record{N: d.n, Data: raw}
	if !utf8.Valid(raw) {
		rec.Data, rec.Repaired = bytes.ToValidUTF8(raw, []byte("\uFFFD")), true
	}
	return rec, nil
}

func (d *docReader) fail(reason string) error {
	d.stopped = true
	return &LineError{N: d.n + 1, Reason: reason, Fatal: true}
}
