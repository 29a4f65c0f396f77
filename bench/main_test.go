package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine (recorders, readers,
// channel consumers) outlives its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
