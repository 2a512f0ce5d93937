package desktop

import "github.com/spinehq/spine/secrets"

// redact removes the secrets from every free-text field of m before it is
// published: what a member asks for (title, instructions, every send) and
// what a runner reports (its machine and declarations, assistant text,
// usage, errors, reasons). Ids and enums are held to their shapes by
// validation and are not free text.
func (m *Message) redact() {
	str := func(ss ...*string) {
		for _, s := range ss {
			*s = secrets.String(*s)
		}
	}
	str(&m.Reason)
	if t := m.Task; t != nil {
		str(&t.Title, &t.Instructions, &t.LocalSessionID)
	}
	for i := range m.Events {
		e := &m.Events[i]
		str(&e.Text, &e.SessionID, &e.Status, &e.Error)
		if len(e.Usage) > 0 {
			e.Usage = secrets.JSON(e.Usage)
		}
	}
	if c := m.Complete; c != nil {
		str(&c.Error)
	}
	if inv := m.Runner; inv != nil {
		str(&inv.Machine)
		for _, list := range [][]string{inv.Apps, inv.Capabilities, inv.ExecutionTargets} {
			for i := range list {
				str(&list[i])
			}
		}
	}
}
