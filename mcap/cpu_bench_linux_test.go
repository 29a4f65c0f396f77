//go:build linux

package mcap

import (
	"syscall"
	"testing"
)

// cpuClock measures the process's user+system CPU time, which the other
// jobs on a shared machine disturb far less than wall time.
type cpuClock struct{ start int64 }

func cpuNow() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func startCPU() cpuClock { return cpuClock{cpuNow()} }

// report adds cpu-MB/s: payload bytes per CPU second spent by the process.
func (c cpuClock) report(b *testing.B, payload int64) {
	ns := cpuNow() - c.start
	if ns > 0 && b.N > 0 {
		b.ReportMetric(float64(payload)*float64(b.N)/(float64(ns)/1e9)/1e6, "cpu-MB/s")
	}
}
