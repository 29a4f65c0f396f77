package bench

import (
	"os"
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestMain fails the package's tests if any goroutine (recorders, readers,
// channel consumers) outlives its test. With EDR_BUDGET_FLOOR set the
// binary is the whole-recorder budget's floor process (budget_floor_test.go).
func TestMain(m *testing.M) {
	if p := os.Getenv("EDR_BUDGET_FLOOR"); p != "" {
		runFloor(p)
	}
	testutil.VerifyNoLeaks(m, removeEdrBinary)
}
