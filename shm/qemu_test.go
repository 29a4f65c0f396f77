package shm

import (
	"os"
	"testing"
)

// skipUnderQEMU skips t when the tests run under qemu-user emulation (the
// CI's ARM step sets EDR_QEMU=1), for a reason that lies in the emulator,
// not in the code under test. See docs/arm.md.
func skipUnderQEMU(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("EDR_QEMU") == "1" {
		t.Skip("under qemu-user: " + why)
	}
}

// reexecUnderQEMU is why a test that re-executes its own binary skips.
const reexecUnderQEMU = "re-exec: the child would be a foreign-architecture executable, which runs only where binfmt_misc hands it to qemu (CI registers no handler)"

// truncatedSIGBUSUnderQEMU is why the truncated-while-mapped case skips.
const truncatedSIGBUSUnderQEMU = "the SIGBUS of a read past a truncated file reaches Go with fault address 0 " +
	"(qemu-user leaves uc_mcontext.fault_address 0 on arm and arm64), so the runtime reports a nil dereference " +
	"instead of the fault the consumer recovers"
