package clock

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestMain fails the package when a test leaves a goroutine behind (a Coarse
// clock's refresh goroutine still running after Close).
func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
