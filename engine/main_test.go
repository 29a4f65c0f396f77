package engine

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestMain fails the package's tests if any goroutine (dumper, hooks, coarse
// clock) outlives the test that started it.
func TestMain(m *testing.M) {
	testutil.VerifyNoLeaks(m)
}
