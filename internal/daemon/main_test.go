package daemon

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestMain fails the package when a test leaves a goroutine behind (a
// source, server or recorder goroutine still running after the daemon
// stopped).
func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
