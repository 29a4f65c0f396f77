package capture

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind (a Run
// that did not return after Close, a context watcher).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
