package pages

import "github.com/spinehq/spine/streams"

// DeadLettersView is the dead letters page (/ui/deadletters): a page of
// the caller's dead letters (an admin's: the org's) in (stream, seq) order.
type DeadLettersView struct {
	DeadLetters []streams.DeadLetter
	More        string // the next page's URL, "" on the last page
	WholeOrg    bool   // an admin's page, which names each letter's member
}

// DeadLetterView is one dead letter's page: the letter and its message as
// stored (redacted), as text, cut to at most MaxMessageText bytes.
type DeadLetterView struct {
	*streams.DeadLetter
	Text     string
	Size     int64 // the whole message's length in bytes
	Shown    int64 // how many of them Text is: less than Size when the message was cut
	WholeOrg bool
}

// MaxMessageText is how much of a dead letter's message its page shows;
// the API (GET /v1/deadletters/{stream}/{seq}) has the whole.
const MaxMessageText = 64 << 10
