package testutil

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// platformWording ends the message of the project's platform sentinels
// ("shm: not supported on this platform"), matched by text because testutil
// cannot import the packages that define them.
const platformWording = "not supported on this platform"

// SkipIfNotSupported skips tb, giving err as the reason, when err is or
// wraps EPERM or EACCES (a privilege this run lacks), ENOSYS, EOPNOTSUPP,
// EPROTONOSUPPORT or EAFNOSUPPORT (a kernel without the feature), or a typed
// not-supported error (errors.ErrUnsupported, cilium/ebpf's
// ErrNotSupported, an edr-lite "not supported on this platform" sentinel).
// For nil and any other error it does nothing: the caller checks err next.
func SkipIfNotSupported(tb testing.TB, err error) {
	tb.Helper()
	if why := notSupported(err); why != "" {
		tb.Skipf("%s: %v", why, err)
	}
}

// notSupported returns why err means "not possible here", or "".
func notSupported(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return "needs a privilege this run lacks"
	case errors.Is(err, syscall.ENOSYS):
		return "the kernel lacks the system call"
	case errors.Is(err, syscall.EOPNOTSUPP):
		return "the kernel does not support the operation"
	case errors.Is(err, syscall.EPROTONOSUPPORT), errors.Is(err, syscall.EAFNOSUPPORT):
		return "the kernel lacks the protocol or address family"
	case errors.Is(err, errors.ErrUnsupported), dependencyNotSupported(err), platformSentinel(err):
		return "not supported here"
	}
	return ""
}

// platformSentinel reports whether an error in err's tree is one of
// edr-lite's platform sentinels (by its wording, see platformWording).
func platformSentinel(err error) bool {
	if err == nil {
		return false
	}
	if strings.HasSuffix(err.Error(), platformWording) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return platformSentinel(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if platformSentinel(e) {
				return true
			}
		}
	}
	return false
}

// SkipUnlessRoot skips tb unless the effective user is root; why says what
// the test needs root for ("to give a file to another user").
func SkipUnlessRoot(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skipf("needs root %s", why)
	}
}

// ReexecUnderEmulation is why a test that re-executes its own binary (a
// subprocess producer, a process killed mid-dump) skips under emulation.
const ReexecUnderEmulation = "re-exec: the child would be a foreign-architecture executable, which runs only where binfmt_misc hands it to qemu (CI registers no handler)"

// SkipUnderEmulation skips tb when the test binary runs under a user-mode
// emulator such as qemu-user (see the package doc for how that is
// detected); why says what emulation defeats ("absolute speed gate").
func SkipUnderEmulation(tb testing.TB, why string) {
	tb.Helper()
	if how := emulation(); how != "" {
		tb.Skipf("under emulation (%s): %s", how, why)
	}
}

// emulationEnv, set to 1, declares that test binaries run under emulation.
const emulationEnv = "EDR_QEMU"

// emulation returns how emulation was detected, or "" when the binary
// seems to run natively.
func emulation() string {
	if os.Getenv(emulationEnv) == "1" {
		return emulationEnv + "=1"
	}
	return foreignHost()
}
