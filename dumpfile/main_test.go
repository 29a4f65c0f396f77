package dumpfile

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestMain fails the package when a test leaves a goroutine behind (its code
// starts none today; the check keeps it that way and catches a test's own).
func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
