package dump

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine (dumper, hooks, coarse
// clock) outlives its Dumper and Recorder.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
