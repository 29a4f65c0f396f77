package capture

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestMain fails the package when a test leaves a goroutine behind (a Run
// that did not return after Close, a context watcher).
func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
