// Package members says which member of an org the apps' telemetry is: the
// identities an org admin mapped to members, and the ones an org's ingest
// token brought that nobody mapped.
//
// Claude Code and Codex name their user in their telemetry (user.email,
// user.account_uuid or user.account_id, user.id), never by spine's member
// id. A member's own token needs none of this: the door records as the
// token's member. An org's ingest token (auth.AudienceIngest), one for
// every developer's exporter, records each event as the member its
// identity maps to (table member_identities, written by Map and Unmap).
// An identity no mapping names is recorded under no one: the door counts
// it (Count, table telemetry_unmapped) and the admins see it (ListUnmapped)
// until they map it, so a user is never silently dropped nor silently
// assigned. An event that names no user at all, of a session no member
// holds, is listed too, under its machine (kind Machine) or its app (kind
// None): nothing maps those.
//
//	ids := []members.Identity{{Kind: members.Email, Value: "ada@example.com"}}
//	who, err := members.Resolve(ctx, pool, "acme", ids)
//	if m, ok := who.Of(ids); ok {
//		// record as {acme, m}
//	} else {
//		err = members.Count(ctx, pool, "acme", map[members.Identity]int64{ids[0]: 1}, time.Now())
//	}
//
// The tables are configuration, not projections: nothing on the log
// rebuilds them.
package members
