package testutil

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
)

func TestSkipIfNotSupportedEBPF(t *testing.T) {
	for _, err := range []error{ebpf.ErrNotSupported, fmt.Errorf("load socket filter: %w", ebpf.ErrNotSupported)} {
		if !skipped(t, func(t *testing.T) { SkipIfNotSupported(t, err) }) {
			t.Errorf("SkipIfNotSupported(%v) did not skip", err)
		}
	}
}

func TestNativeOn(t *testing.T) {
	f := func(goarch, host string, want bool) {
		t.Helper()
		if got := nativeOn(goarch, host); got != want {
			t.Errorf("nativeOn(%q, %q) = %v, want %v", goarch, host, got, want)
		}
	}
	f("amd64", "x86_64", true)
	f("arm64", "x86_64", false) // qemu-aarch64 on a PC
	f("arm", "x86_64", false)
	f("386", "x86_64", true)
	f("386", "i686", true)
	f("amd64", "aarch64", false)
	f("arm64", "aarch64", true)
	f("arm", "aarch64", true) // aarch32 may be native: only EDR_QEMU tells
	f("arm", "armv7l", true)
	f("riscv64", "x86_64", false)
	f("riscv64", "riscv64", true)
	f("wasm", "x86_64", true) // not listed: assumed native
}
