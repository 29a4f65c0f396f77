package main

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestMain fails the package when a test leaves a goroutine behind (a verb
// run in-process, replay's interrupt watcher say, still running after the
// verb returned), and removes the binary the end-to-end tests built.
//
// Started with limitASEnv set, the test binary is instead a launcher of
// the command in its arguments (execLimited).
func TestMain(m *testing.M) {
	execLimited()
	testutil.VerifyNoLeaks(m, removeBinary)
}
