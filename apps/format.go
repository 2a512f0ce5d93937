package apps

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strings"

	json "github.com/spinehq/spine/internal/fastjson"
)

// Format names one kind of input file.
type Format string

// The formats spine imports.
const (
	// FormatClaudeStream is `claude -p --output-format stream-json` (one event
	// a line, or a JSON array of events) and `--output-format json` (the
	// result object alone).
	FormatClaudeStream Format = "claude-stream-json"
	// FormatClaudeTranscript is a Claude Code project transcript,
	// ~/.claude/projects/<project>/<session>.jsonl.
	FormatClaudeTranscript Format = "claude-transcript"
	// FormatCodexExec is `codex exec --json`.
	FormatCodexExec Format = "codex-exec-json"
	// FormatCodexRollout is a Codex rollout, ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl.
	FormatCodexRollout Format = "codex-rollout"
)

// Formats lists every format, for flags and docs.
var Formats = []Format{FormatClaudeStream, FormatClaudeTranscript, FormatCodexExec, FormatCodexRollout}

// App is the spine app a format belongs to.
func (f Format) App() string {
	if strings.HasPrefix(string(f), "codex") {
		return "codex"
	}
	return "claude-code"
}

// ParseFormat checks a --format value ("" means detect).
func ParseFormat(s string) (Format, error) {
	if s == "" || slices.Contains(Formats, Format(s)) {
		return Format(s), nil
	}
	return "", fmt.Errorf("%w: %q is not one of %v", ErrUnknownFormat, s, Formats)
}

// Detect names the format of a file from its first values. It reads only
// what the buffered reader already holds (at most 64 KiB).
func Detect(r *bufio.Reader) (Format, error) {
	head, _ := r.Peek(64 << 10)
	rr := NewRecordReader(bufio.NewReaderSize(bytes.NewReader(head), 64<<10))
	for range 50 {
		rec, err := rr.Next()
		if err != nil {
			if le, ok := err.(*LineError); ok && !le.Fatal {
				continue
			}
			break
		}
		if f := classify(rec.Data); f != "" {
			return f, nil
		}
	}
	return "", ErrUnknownFormat
}

// classify names the format one value belongs to, or "" when it does not tell.
func classify(data []byte) Format {
	var v struct {
		Type      string          `json:"type"`
		Payload   json.RawMessage `json:"payload"`
		SessionID *string         `json:"sessionId"`
		Parent    json.RawMessage `json:"parentUuid"`
		LeafUUID  *string         `json:"leafUuid"`
		Session   *string         `json:"session_id"`
		ThreadID  *string         `json:"thread_id"`
	}
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	switch {
	case len(v.Payload) > 0 && slices.Contains([]string{"session_meta", "turn_context", "response_item", "event_msg", "compacted"}, v.Type):
		return FormatCodexRollout
	case v.ThreadID != nil || strings.HasPrefix(v.Type, "thread.") || strings.HasPrefix(v.Type, "turn.") || strings.HasPrefix(v.Type, "item."):
		return FormatCodexExec
	case v.SessionID != nil || len(v.Parent) > 0 || v.LeafUUID != nil || v.Type == "file-history-snapshot" || v.Type == "summary":
		return FormatClaudeTranscript
	case v.Session != nil || slices.Contains([]string{"system", "assistant", "user", "result"}, v.Type):
		return FormatClaudeStream
	}
	return ""
}
