//go:build ecu

package capture

// KernelFilterBuilt: the ECU build (go build -tags ecu, docs/ecu.md) has no
// eBPF socket filter: cilium/ebpf, which loads it, is 0.9 MB of the
// binary. A raw source of this build takes every frame of its interface;
// the recorder's configuration check refuses a Filter (NotBuiltFilter).
const KernelFilterBuilt = false

// NotBuiltFilter says why a raw source's filter is refused in this build.
const NotBuiltFilter = "the kernel filter of raw capture (an eBPF socket filter) is not in this build of edr-lite (the ECU build, go build -tags ecu): the full build has it (docs/ecu.md); without a filter, a raw source takes every frame of its interface"
