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
	var r redactor
	r.strings(&out.AppSessionRef, &out.Workspace, &out.Prompt, &out.Text, &out.Reason,
		&out.Error, &out.Model, &out.Effort, &out.Server, &out.Tool)
	if e.Event != nil {
		out.Event = r.event(e.Event)
	}
	if e.Usage != nil {
		out.Usage = r.usage(e.Usage)
	}
	if e.Telemetry != nil {
		out.Telemetry = r.telemetry(e.Telemetry)
	}
	if len(e.Artifacts) > 0 {
		out.Artifacts = append([]Artifact(nil), e.Artifacts...)
		for i := range out.Artifacts {
			r.strings(&out.Artifacts[i].Name, &out.Artifacts[i].Content)
		}
	}
	if !r.changed {
		return e
	}
	return &out
}

// redactor redacts fields of a copy, noting whether any held a secret.
type redactor struct{ changed bool }

func (r *redactor) strings(fields ...*string) {
	for _, s := range fields {
		if red := secrets.String(*s); red != *s {
			*s, r.changed = red, true
		}
	}
}

// raw is raw redacted, itself when it holds no secret.
func (r *redactor) raw(raw json.RawMessage) json.RawMessage {
	if red := redactRaw(raw); red != nil {
		r.changed = true
		return red
	}
	return raw
}

// event is a redacted copy of ev.
func (r *redactor) event(ev *Event) *Event {
	out := *ev
	r.strings(&out.Command, &out.Output, &out.Path, &out.Content, &out.URL, &out.Server, &out.Tool)
	out.Arguments = r.raw(ev.Arguments)
	return &out
}

// usage is a redacted copy of u.
func (r *redactor) usage(u *Usage) *Usage {
	out := *u
	out.Raw = r.raw(u.Raw)
	return &out
}

// telemetry is a redacted copy of t.
func (r *redactor) telemetry(t *Telemetry) *Telemetry {
	out := *t
	r.strings(&out.Model, &out.Effort, &out.QuerySource, &out.Tool, &out.ErrorType, &out.Reason)
	if t.Usage != nil {
		out.Usage = r.usage(t.Usage)
	}
	if t.Event != nil {
		out.Event = r.event(t.Event)
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
