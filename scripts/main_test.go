package scripts

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind (a Live
// runner not stopped by Close, say).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
