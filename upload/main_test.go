package upload

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestMain fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
