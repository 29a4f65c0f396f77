//go:build !linux

package mcap

import "testing"

type cpuClock struct{}

func startCPU() cpuClock                  { return cpuClock{} }
func (cpuClock) report(*testing.B, int64) {}
