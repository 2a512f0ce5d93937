package pgboot

import (
	"io"
	"os"
	"strings"
)

// Error messages quote at most this much of a program's output or log.
const (
	tailBytes = 4096
	tailLines = 20
)

// tail returns the last lines of out, which is where the reason for a
// failure usually is.
func tail(out []byte) string {
	if len(out) > tailBytes {
		out = out[len(out)-tailBytes:]
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return strings.Join(lines, "\n")
}

// tailFile is tail of a file's end, or why that could not be read.
func tailFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > tailBytes {
		_, _ = f.Seek(-tailBytes, io.SeekEnd)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return tail(b)
}

// quote is out's tail on lines of its own, or "" when there is no output.
func quote(out []byte) string {
	t := tail(out)
	if strings.TrimSpace(t) == "" {
		return ""
	}
	return "\n" + t
}
