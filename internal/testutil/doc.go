// Package testutil holds the test habits every edr-lite package shares:
// skipping a test whose environment lacks a privilege or kernel feature,
// gating allocation counts without GC noise, and failing a package whose
// tests leave goroutines behind.
//
// The whole API: SkipIfNotSupported(tb, err) turns an error that says "not
// permitted / not supported here" into a skip with the reason, and is a
// no-op for any other error (the caller still checks it); SkipUnlessRoot and
// SkipUnderEmulation skip with a reason when the run is not root or runs
// under a user-mode emulator (qemu-user). MinAllocs and AssertNoAllocs
// measure allocations as the minimum over several testing.AllocsPerRun
// rounds (tailscale's tstest.MinAllocsPerRun); Mallocs counts every
// allocation of a number of calls, unrounded. VerifyNoLeaks(m) is a
// package's TestMain: it runs the tests and fails the binary when goroutines
// outlive them (go.uber.org/goleak with the project's ignore list), then
// runs its after functions; VerifyNone(tb) does the same check at the end
// of one test. CheckDocHexdump checks the ```hexdump byte examples of a
// format document against the pinned file they quote.
//
// A typical package:
//
//	func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
//
//	func TestRawSocket(t *testing.T) {
//		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
//		testutil.SkipIfNotSupported(t, err) // needs CAP_NET_RAW
//		if err != nil {
//			t.Fatal(err)
//		}
//		...
//	}
//
// It is not for: production code (only _test.go files import it), fixtures
// of one package (those stay in that package's tests), or hiding failures:
// an error that is not about privileges or support still fails the test.
//
// # Caveats
//
// testutil imports no edr-lite package, so that every package's internal
// tests can import it without a cycle. It therefore recognises the
// project's own platform sentinels (arena, capture, mcap, shm
// ErrNotSupported, all worded "<pkg>: not supported on this platform", the
// project's convention for platform files) by that wording, not by
// identity.
//
// Emulation is detected from the EDR_QEMU=1 environment variable (set by a
// CI job that runs test binaries under qemu-user) or, on Linux, from
// /proc/sys/kernel/arch naming another architecture than the binary's:
// qemu-user passes that file through from the host kernel. A 32-bit binary
// on its 64-bit host (386 on x86_64, arm on aarch64) counts as native.
//
// MinAllocs inherits testing.AllocsPerRun's rounding: the average per run is
// truncated, so an allocation in fewer than one run in runs is not seen.
// Gates that must see every allocation use Mallocs.
//
// All functions are safe to call from parallel tests, except MinAllocs,
// AssertNoAllocs and Mallocs, which (like testing.AllocsPerRun) set
// GOMAXPROCS to 1 while they measure.
package testutil
