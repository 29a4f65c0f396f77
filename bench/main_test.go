package bench

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestMain fails the package's tests if any goroutine (recorders, readers,
// channel consumers) outlives its test.
func TestMain(m *testing.M) {
	testutil.VerifyNoLeaks(m)
}
