package desktop

// The read's SQL, for plan checks (plan_test.go).
var (
	RecordedSessionsSQL = recordedSessionsSQL
	ProgressSQL         = progressSQL
)

// BeforeEvents sets the hook that runs between a session's chunks and its
// events are read, until the test ends.
func BeforeEvents(t interface{ Cleanup(func()) }, f func()) {
	beforeEvents = f
	t.Cleanup(func() { beforeEvents = nil })
}
