//go:build !linux

package replay

import "time"

// nap sleeps for d (time.Sleep where clock_nanosleep is not available).
func nap(d time.Duration) { time.Sleep(d) }
