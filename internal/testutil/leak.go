package testutil

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// ignored are the goroutines that may outlive a package's tests without
// being a leak. goleak itself ignores the testing framework's goroutines
// and os/signal's watcher; beyond those the project needs none today: the
// packages that used goleak before testutil did so without options, and
// every package's tests (with and without -race) leave nothing else. Add an
// entry only for a dependency's goroutine that cannot be stopped, with
// goleak.IgnoreTopFunction and the reason.
var ignored = []goleak.Option{}

// VerifyNoLeaks runs a package's tests and exits; the binary fails when
// goroutines outside the ignore list are still running after them. Call it
// as the package's TestMain:
//
//	func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
//
// The after functions run last, before the exit, in order: they remove
// what the package's tests share across tests (a binary built once).
func VerifyNoLeaks(m *testing.M, after ...func()) {
	exit := func(code int) {
		for _, f := range after {
			f()
		}
		os.Exit(code)
	}
	goleak.VerifyTestMain(m, append([]goleak.Option{goleak.Cleanup(exit)}, ignored...)...)
}

// VerifyNone fails tb, after it and its cleanups have finished, when
// goroutines that were not running at the call are still running. Call it
// first thing in a test that starts and stops goroutines of its own, so a
// leak is reported against that test rather than at the package's end.
func VerifyNone(tb testing.TB) {
	tb.Helper()
	opts := append([]goleak.Option{goleak.IgnoreCurrent()}, ignored...)
	tb.Cleanup(func() { goleak.VerifyNone(tb, opts...) })
}
