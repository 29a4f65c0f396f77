package testutil

import (
	"errors"
	"os"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
)

// dependencyNotSupported reports whether err is or wraps a dependency's
// typed not-supported error (cilium/ebpf: a missing kernel feature).
func dependencyNotSupported(err error) bool {
	return errors.Is(err, ebpf.ErrNotSupported)
}

// foreignHost returns "kernel.arch=M" when /proc/sys/kernel/arch, which
// qemu-user passes through from the host kernel, names an architecture the
// binary's GOARCH does not run on natively; else "".
func foreignHost() string {
	b, err := os.ReadFile("/proc/sys/kernel/arch")
	if err != nil {
		return "" // kernels before 6.1 lack the file: only EDR_QEMU tells
	}
	host := strings.TrimSpace(string(b))
	if host == "" || nativeOn(runtime.GOARCH, host) {
		return ""
	}
	return "kernel.arch=" + host + ", GOARCH=" + runtime.GOARCH
}

// nativeOn reports whether a GOARCH binary runs natively on a kernel whose
// machine (uname -m) is host.
func nativeOn(goarch, host string) bool {
	switch goarch {
	case "amd64":
		return host == "x86_64"
	case "386":
		return host == "x86_64" || strings.HasPrefix(host, "i") && strings.HasSuffix(host, "86")
	case "arm64":
		return host == "aarch64" || host == "arm64"
	case "arm":
		return host == "aarch64" || host == "arm64" || strings.HasPrefix(host, "arm")
	case "loong64":
		return host == "loongarch64"
	case "mips64le", "mips64", "mipsle", "mips":
		return strings.HasPrefix(host, "mips")
	case "ppc64", "ppc64le", "riscv64", "s390x":
		return host == goarch
	}
	return true // an architecture not listed here: assume native
}
