package shm

// truncatedSIGBUSUnderQEMU is why the truncated-while-mapped case skips
// under emulation (docs/arm.md).
const truncatedSIGBUSUnderQEMU = "the SIGBUS of a read past a truncated file reaches Go with fault address 0 " +
	"(qemu-user leaves uc_mcontext.fault_address 0 on arm and arm64), so the runtime reports a nil dereference " +
	"instead of the fault the consumer recovers"
