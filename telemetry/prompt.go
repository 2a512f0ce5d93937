package telemetry

import (
	"github.com/spinehq/spine/library"
	"github.com/spinehq/spine/secrets"
)

// placeholders are what the apps send for a prompt they were not told to
// log (Claude Code without OTEL_LOG_USER_PROMPTS=1, Codex without
// log_user_prompt): no prompt's text.
var placeholders = map[string]bool{"<REDACTED>": true, "[REDACTED]": true}

// promptDigest names a prompt's text without carrying it: the Library
// digest of the text once redacted (as a session.start's prompt is
// stored), "" for no text. The text itself goes nowhere: neither the
// envelope nor a log.
func promptDigest(text string) string {
	if text == "" || placeholders[text] {
		return ""
	}
	return library.Digest([]byte(secrets.String(text)))
}
