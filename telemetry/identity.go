package telemetry

import "github.com/spinehq/spine/members"

// identityAttrs are the attributes that name an event's user, by kind, in
// members.Kinds order: Claude Code's user.email, user.account_uuid and
// user.id (an install's), Codex's user.email and user.account_id.
var identityAttrs = []struct{ kind, key string }{
	{members.Email, "user.email"},
	{members.Account, "user.account_uuid"},
	{members.Account, "user.account_id"},
	{members.User, "user.id"},
}

// Identities are what e says of its user, in the order an ingest token's
// events are mapped by (members.Members.Of); a value no mapping could
// hold is left out. None for an app that says nothing (Codex with a
// provider's API key).
func (e Event) Identities() []members.Identity {
	var out []members.Identity
	for _, ia := range identityAttrs {
		v, _ := e.Attrs.Str(ia.key)
		if v == "" {
			v, _ = e.Resource.Str(ia.key)
		}
		if id, err := members.Parse(ia.kind, v); err == nil {
			out = append(out, id)
		}
	}
	return out
}
