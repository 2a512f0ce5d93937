package streams

import "time"

// SetCheckpointEvery sets how long passOver may leave the checkpoint
// unwritten, until the test ends.
func SetCheckpointEvery(d time.Duration) (restore func()) {
	old := checkpointEvery
	checkpointEvery = d
	return func() { checkpointEvery = old }
}
