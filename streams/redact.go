package streams

import (
	"encoding/json"

	"github.com/spinehq/spine/secrets"
)

// Redacted returns e with the secrets removed from every free-text field
// (usage.raw and an event's arguments included, which stay valid JSON). An envelope without any is
// returned as is; one with some is copied, so the caller's value is never
// changed. Ids, enums and the owner are not free text: validation keeps
// them to their shapes.
func (e *Envelope) Redacted() *Envelope {
	out := *e
	changed := false
	str := func(s *string) {
		if r := secrets.String(*s); r != *s {
			*s, changed = r, true
		}
	}
	for _, f := range []*string{&out.AppSessionRef, &out.Workspace, &out.Prompt, &out.Text, &out.Reason,
		&out.Error, &out.Model, &out.Effort, &out.Server, &out.Tool} {
		str(f)
	}
	if e.Event != nil {
		ev := *e.Event
		for _, f := range []*string{&ev.Command, &ev.Output, &ev.Path, &ev.Content, &ev.URL, &ev.Server, &ev.Tool} {
			str(f)
		}
		if args := redactRaw(ev.Arguments); args != nil {
			ev.Arguments, changed = args, true
		}
		out.Event = &ev
	}
	if e.Usage != nil {
		u := *e.Usage
		if raw := redactRaw(u.Raw); raw != nil {
			u.Raw, changed = raw, true
		}
		out.Usage = &u
	}
	if len(e.Artifacts) > 0 {
		out.Artifacts = append([]Artifact(nil), e.Artifacts...)
		for i := range out.Artifacts {
			str(&out.Artifacts[i].Name)
			str(&out.Artifacts[i].Content)
		}
	}
	if !changed {
		return e
	}
	return &out
}

// redactRaw is raw redacted, or nil when it holds no secret.
func redactRaw(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	r := secrets.JSON(raw)
	if &r[0] == &raw[0] && len(r) == len(raw) {
		return nil
	}
	return r
}
