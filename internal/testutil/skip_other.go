//go:build !linux

package testutil

// dependencyNotSupported: cilium/ebpf (the one dependency with a typed
// not-supported error) is only used on Linux.
func dependencyNotSupported(error) bool { return false }

// foreignHost: only EDR_QEMU tells emulation on this platform.
func foreignHost() string { return "" }
