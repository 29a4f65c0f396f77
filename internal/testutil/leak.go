package testutil

import (
	"testing"

	"go.uber.org/goleak"
)

// ignored are the goroutines that may outlive a package's tests without
// being a leak. goleak already ignores the testing framework's own
// goroutines and os/signal's watcher.
var ignored = []goleak.Option{}

// VerifyNoLeaks runs a package's tests and exits; the binary fails when
// goroutines outside the ignore list are still running after them. Call it
// as the package's TestMain:
//
//	func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
func VerifyNoLeaks(m *testing.M) {
	goleak.VerifyTestMain(m, ignored...)
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
