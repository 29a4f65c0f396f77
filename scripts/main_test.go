package scripts

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestMain fails the package when a test leaves goroutines behind (a Live
// runner not stopped by Close, say).
func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
