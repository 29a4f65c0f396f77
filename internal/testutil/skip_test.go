package testutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
)

func TestMain(m *testing.M) { VerifyNoLeaks(m) }

// skipped reports whether f skipped the subtest it ran in.
func skipped(t *testing.T, f func(t *testing.T)) (didSkip bool) {
	t.Helper()
	t.Run("probe", func(t *testing.T) {
		defer func() { didSkip = t.Skipped() }()
		f(t)
	})
	return didSkip
}

func TestSkipIfNotSupported(t *testing.T) {
	f := func(err error, want bool) {
		t.Helper()
		if got := skipped(t, func(t *testing.T) { SkipIfNotSupported(t, err) }); got != want {
			t.Errorf("SkipIfNotSupported(%v) skipped = %v, want %v", err, got, want)
		}
	}
	f(nil, false)
	f(io.EOF, false)
	f(syscall.EINVAL, false)
	f(syscall.ENOMEM, false)
	f(errors.New("shm: segment is corrupt"), false)
	for _, errno := range []syscall.Errno{syscall.EPERM, syscall.EACCES, syscall.ENOSYS, syscall.EOPNOTSUPP, syscall.EPROTONOSUPPORT, syscall.EAFNOSUPPORT} {
		f(errno, true)
		f(fmt.Errorf("capture: raw lo: socket(AF_PACKET): %w", errno), true)
		f(&os.SyscallError{Syscall: "mount", Err: errno}, true)
		f(errors.Join(io.EOF, fmt.Errorf("x: %w", errno)), true)
	}
	f(errors.ErrUnsupported, true)
	f(fmt.Errorf("x: %w", errors.ErrUnsupported), true)
	platform := errors.New("arena: not supported on this platform")
	f(platform, true)
	f(fmt.Errorf("%w (after 3 tries)", platform), true) // the wording is matched per error in the tree
	f(errors.Join(io.EOF, platform), true)
}

func TestSkipUnlessRoot(t *testing.T) {
	if got, want := skipped(t, func(t *testing.T) { SkipUnlessRoot(t, "to test") }), os.Geteuid() != 0; got != want {
		t.Errorf("euid %d: skipped = %v, want %v", os.Geteuid(), got, want)
	}
}

func TestSkipUnderEmulation(t *testing.T) {
	t.Setenv(emulationEnv, "1")
	if !skipped(t, func(t *testing.T) { SkipUnderEmulation(t, "to test") }) {
		t.Errorf("%s=1 did not skip", emulationEnv)
	}
	t.Setenv(emulationEnv, "")
	if got, want := skipped(t, func(t *testing.T) { SkipUnderEmulation(t, "to test") }), foreignHost() != ""; got != want {
		t.Errorf("without %s: skipped = %v, want %v (foreignHost %q)", emulationEnv, got, want, foreignHost())
	}
}
