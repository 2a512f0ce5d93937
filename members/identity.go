package members

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kinds of identity, in the order an event's are tried: the address an
// admin knows, then the account (stable, opaque), then the app's install
// id (one machine's).
const (
	// Email is user.email (Claude Code signed in, Codex with ChatGPT).
	Email = "email"
	// Account is user.account_uuid (Claude Code) or user.account_id (Codex).
	Account = "account"
	// User is user.id: Claude Code's id of one installation.
	User = "user"
)

// Kinds lists the kinds in the order an event's identities are tried.
var Kinds = []string{Email, Account, User}

// Kinds of an unmapped entry only: an ingest token's events that named no
// user (every hook, Codex with a provider's API key) and were of a session
// no member of the org holds. Nothing maps them (only a member's token
// records such an app); they are listed so that the events are not lost
// unseen.
const (
	// Machine is the machine the events came from (host.name, as the
	// session's workerId: Codex sends it).
	Machine = "machine"
	// None is an app whose events named neither a user nor a machine
	// (the hooks, Claude Code): its value is the app.
	None = "none"
)

// Listed lists every kind an unmapped entry can have.
var Listed = []string{Email, Account, User, Machine, None}

// MaxValueLen bounds an identity's value in bytes (an email address is at
// most 254).
const MaxValueLen = 320

// Identity is what an app said of its user: one kind and its value.
type Identity struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

// Parse checks kind (one of Kinds) and value and gives the identity as it
// is stored: an email in lower case (Claude Code and an admin may spell it
// differently), the others as given. A value is refused (ErrValue) when
// empty, too long, not UTF-8, or holding a control or bidirectional
// formatting character: anyone with the ingest token sets the values an
// admin's terminal shows.
func Parse(kind, value string) (Identity, error) {
	return parse(Kinds, kind, value)
}

// ParseListed is Parse for any kind an unmapped entry has (Listed): a
// page's cursor of the unmapped list.
func ParseListed(kind, value string) (Identity, error) {
	return parse(Listed, kind, value)
}

func parse(kinds []string, kind, value string) (Identity, error) {
	if !slices.Contains(kinds, kind) {
		return Identity{}, ErrKind
	}
	if value == "" || len(value) > MaxValueLen || !utf8.ValidString(value) || strings.ContainsFunc(value, unshowable) {
		return Identity{}, ErrValue
	}
	if kind == Email {
		value = strings.ToLower(value)
	}
	return Identity{Kind: kind, Value: value}, nil
}

// unshowable: a character a terminal acts on rather than shows (C0, DEL,
// C1: escape sequences, carriage returns) or that reorders what follows
// it (bidirectional overrides and isolates).
func unshowable(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}
