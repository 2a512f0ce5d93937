package streams

import (
	"strings"
)

// Stream names and their subjects.
const (
	StreamSessions = "SPINE_SESSIONS"
	StreamDLQ      = "SPINE_DLQ"
	StreamLibrary  = "SPINE_LIBRARY"

	subjectSession = "spine.session."
	subjectMCP     = "spine.mcp."
	subjectWorker  = "spine.worker."
	subjectDLQ     = "spine.dlq."
)

// SessionSubject is spine.session.<id>.<start|chunk|control|end|usage|telemetry>.
func SessionSubject(sessionID, typ string) string {
	return subjectSession + sessionID + "." + strings.TrimPrefix(typ, "session.")
}

// MCPSubject is spine.mcp.<sessionId>.call.
func MCPSubject(sessionID string) string { return subjectMCP + sessionID + ".call" }

// WorkerSubject is spine.worker.<workerId>.disconnect.
func WorkerSubject(workerID string) string { return subjectWorker + workerID + ".disconnect" }

// DLQSubject is spine.dlq.<stream>.<reason>.
func DLQSubject(stream, reason string) string { return subjectDLQ + stream + "." + reason }

// CheckSubject verifies that an envelope arrived on the subject its own
// fields name, so a producer cannot file one session's chunk under another.
func CheckSubject(e *Envelope, subject string) error {
	if want := e.Subject(); want != subject {
		return Reject(ReasonSubject, "published on %q, envelope belongs on %q", subject, want)
	}
	return nil
}

// RecorderSubjects are the subjects the recorder projects. Other projectors
// read other subjects of the same stream (accounting reads starts and ends).
func RecorderSubjects() []string {
	return []string{subjectSession + ">", subjectMCP + ">", subjectWorker + ">"}
}

// SubjectMatcher returns a function that reports whether a subject matches
// any of the filters, with NATS wildcards ('*' one token, '>' the rest).
func SubjectMatcher(filters []string) func(string) bool {
	split := make([][]string, len(filters))
	for i, f := range filters {
		split[i] = strings.Split(f, ".")
	}
	return func(subject string) bool {
		tokens := strings.Split(subject, ".")
		for _, f := range split {
			if matchTokens(f, tokens) {
				return true
			}
		}
		return false
	}
}

func matchTokens(filter, tokens []string) bool {
	for i, f := range filter {
		if f == ">" {
			return len(tokens) > i
		}
		if i >= len(tokens) || (f != "*" && f != tokens[i]) {
			return false
		}
	}
	return len(filter) == len(tokens)
}
