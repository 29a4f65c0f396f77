package fuzz

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestMain fails the package when a test leaves a goroutine behind (a target
// whose parser, player or rule runner left workers running).
func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
