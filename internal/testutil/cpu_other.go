//go:build !linux

package testutil

import "time"

var processStart = time.Now()

// ThreadCPU is, off Linux, the wall time since the package was loaded:
// ratios of it still compare work, without Linux's immunity to other
// processes.
func ThreadCPU() time.Duration { return time.Since(processStart) }
