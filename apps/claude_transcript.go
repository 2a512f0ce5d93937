package apps

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	json "github.com/spinehq/spine/internal/fastjson"
)

// claudeTranscript reads a Claude Code project transcript. One response
// appears on several lines (one per content block, same message.id and
// requestId); each is counted once with its final usage. Sidechain lines
// (subagents) belong to the same session. A resumed session's file repeats
// earlier lines: a line already imported (same session, same uuid) is
// passed over, and a response already counted elsewhere is not counted again.
type claudeTranscript struct {
	tr *Translator
	fc *fileCtx
}

type transcriptLine struct {
	Type          string          `json:"type"`
	Subtype       string          `json:"subtype"`
	SessionID     string          `json:"sessionId"`
	UUID          string          `json:"uuid"`
	Timestamp     string          `json:"timestamp"`
	CWD           string          `json:"cwd"`
	RequestID     string          `json:"requestId"`
	Entrypoint    string          `json:"entrypoint"`
	IsMeta        bool            `json:"isMeta"`
	Message       *claudeMessage  `json:"message"`
	ToolUseResult json.RawMessage `json:"toolUseResult"`
	Attachment    *attachment     `json:"attachment"`
}

// attachment is what Claude Code adds to the model's input beside the
// conversation: file contents, hook output, reminders, and a prompt the
// person typed while a turn was running (queued_command).
type attachment struct {
	Type        string          `json:"type"`
	Prompt      json.RawMessage `json:"prompt"`
	CommandMode string          `json:"commandMode"`
	IsMeta      bool            `json:"isMeta"`
	Origin      *struct {
		Kind string `json:"kind"`
	} `json:"origin"`
}

// transcriptIgnored are the line types Claude Code writes (2.1.197 reads
// every one back) that carry nothing spine records; docs/counting.md says
// what each is. An unknown type is reported as one.
var transcriptIgnored = []string{
	// its own record of the session for its UI and --resume: titles, tags,
	// the agent, the mode, the last prompt again, the worktree, a PR link
	"summary", "custom-title", "ai-title", "tag", "agent-name", "agent-color", "agent-setting", "mode",
	"permission-mode", "isolation-latch", "worktree-state", "relocated", "pr-link", "bridge-session", "last-prompt",
	// undo and compaction bookkeeping
	"file-history-snapshot", "attribution-snapshot", "content-replacement", "fork-context-ref",
	"marble-origami-commit", "marble-origami-snapshot", "marble-origami-reset",
	// notices (compaction boundaries, API errors, slash-command output),
	// a tool's progress before its result, the queue of prompts the user
	// lines repeat
	"system", "progress", "queue-operation",
}

// headlessEntrypoints are the entrypoints of a headless Claude Code run
// (kind run): `claude -p` (sdk-cli) and the TypeScript and Python SDKs,
// the ones Claude Code itself treats as non-interactive. Any other (cli,
// an IDE, the desktop app), or none, is kind open.
var headlessEntrypoints = []string{"sdk-cli", "sdk-ts", "sdk-py"}

func (p *claudeTranscript) record(ctx context.Context, rec Record) (string, error) {
	var l transcriptLine
	if err := json.Unmarshal(rec.Data, &l); err != nil {
		return "not a transcript line: " + err.Error(), nil
	}
	if slices.Contains(transcriptIgnored, l.Type) || l.Type == "attachment" && !l.Attachment.typedPrompt() {
		return "", nil
	}
	if l.Type != "user" && l.Type != "assistant" && l.Type != "attachment" && l.Message == nil {
		return fmt.Sprintf("unknown line type %q", l.Type), nil
	}
	if l.SessionID == "" {
		l.SessionID = fileSessionID(p.fc.path)
	}
	s := p.tr.session(p.fc, l.SessionID)
	if s == nil {
		return p.tr.endedSkip(l.SessionID), nil
	}
	if l.Type == "attachment" {
		l.Message = &claudeMessage{Role: "user", Content: l.Attachment.Prompt}
	}
	if l.Message != nil && mayHaveText(l.Message.Content) && p.tr.seenLine(s, l.UUID) {
		return "", nil
	}
	s.setWorkspace(l.CWD)
	if !s.begun && l.Entrypoint != "" {
		s.run = slices.Contains(headlessEntrypoints, l.Entrypoint) // the session's first lines say how it ran
	}
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

// typedPrompt reports whether an attachment is a prompt the person typed
// while a turn was running: Claude Code shows it as theirs and counts it as
// a turn of theirs. Every other attachment is context Claude Code added
// (file contents, hook output, reminders): neither the person's words, nor
// the model's, nor an action.
func (a *attachment) typedPrompt() bool {
	return a != nil && a.Type == "queued_command" && !a.IsMeta && (a.CommandMode == "" || a.CommandMode == "prompt") &&
		(a.Origin == nil || a.Origin.Kind == "human") && len(a.Prompt) > 0
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

// current is nil: a transcript's lines name their sessions, one process's exit is none of theirs.
func (p *claudeTranscript) current() *session { return nil }
