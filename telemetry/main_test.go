package telemetry_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the tests if one left a goroutine behind (the capture
// run's servers, a decoder's).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
