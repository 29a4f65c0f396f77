//go:build !ecu

package capture

// KernelFilterBuilt: this build compiles a Filter to an eBPF socket filter
// (filter_linux.go, with cilium/ebpf). The ECU build does not
// (filter_ecu.go).
const KernelFilterBuilt = true

// NotBuiltFilter: the filter is in this build (filter_ecu.go says why it
// is not in the ECU build).
const NotBuiltFilter = ""
