package importer

import (
	"bytes"
	"context"
	"fmt"
	json "github.com/spinehq/spine/internal/fastjson"
	"slices"
)

// claudeTranscript reads a Claude Code project transcript. One response
// appears on several lines (one per content block, same message.id and
// requestId); each is counted once with its final usage. Sidechain lines
// (subagents) belong to the same session. A resumed session's file repeats
// earlier lines: a line already imported (same session, same uuid) is
// passed over, and a response already counted elsewhere is not counted again.
type claudeTranscript struct {
	imp *Importer
	fc  *fileCtx
}

type transcriptLine struct {
	Type          string          `json:"type"`
	Subtype       string          `json:"subtype"`
	SessionID     string          `json:"sessionId"`
	UUID          string          `json:"uuid"`
	Timestamp     string          `json:"timestamp"`
	CWD           string          `json:"cwd"`
	RequestID     string          `json:"requestId"`
	IsMeta        bool            `json:"isMeta"`
	Message       *claudeMessage  `json:"message"`
	ToolUseResult json.RawMessage `json:"toolUseResult"`
}

// transcriptOther are line types that carry nothing to record.
var transcriptOther = []string{"summary", "file-history-snapshot", "system", "queue-operation", "progress"}

func (p *claudeTranscript) record(ctx context.Context, rec record) (string, error) {
	var l transcriptLine
	if err := json.Unmarshal(rec.data, &l); err != nil {
		return "not a transcript line: " + err.Error(), nil
	}
	if slices.Contains(transcriptOther, l.Type) {
		return "", nil
	}
	if l.Type != "user" && l.Type != "assistant" && l.Message == nil {
		return fmt.Sprintf("unknown line type %q", l.Type), nil
	}
	if l.SessionID == "" {
		l.SessionID = fileSessionID(p.fc.path)
	}
	s := p.imp.session(p.fc, l.SessionID)
	if s == nil {
		return endedSkip(l.SessionID), nil
	}
	if l.Message != nil && mayHaveText(l.Message.Content) && p.imp.seenLine(s, l.UUID) {
		return "", nil
	}
	s.setWorkspace(l.CWD)
	at := parseTime(l.Timestamp)
	s.touch(at)
	at = s.when(at, p.fc)
	if l.Message == nil {
		return l.Type + " line without message", nil
	}
	if l.Type == "assistant" || l.Message.Role == "assistant" {
		return "", s.assistant(ctx, at, l.Message, l.RequestID)
	}
	if l.IsMeta {
		return "", nil // Claude Code's own caveats, not the person's words
	}
	return "", s.user(ctx, at, l.Message, l.ToolUseResult)
}

func (p *claudeTranscript) done(context.Context) error { return nil }

// mayHaveText reports whether message content may hold text: a string, or
// blocks that mention "text". Only such lines are remembered by uuid (a
// resumed session's copy would repeat their prose); the rest are safe to
// read twice: a response's usage is counted once by its key, a tool call
// once by its id, and a result finds its call only once.
func mayHaveText(content json.RawMessage) bool {
	c := bytes.TrimLeft(content, " \t\r\n")
	return len(c) > 0 && c[0] == '"' || bytes.Contains(c, []byte(`"text"`))
}
