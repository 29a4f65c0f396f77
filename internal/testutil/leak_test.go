package testutil

import (
	"testing"
)

func TestVerifyNone(t *testing.T) {
	// A goroutine that ends with the test (stopped by a later cleanup) is
	// not a leak; one still running after every cleanup is.
	for _, leak := range []bool{false, true} {
		s := &spy{TB: t}
		VerifyNone(s)
		stop := make(chan struct{})
		go func() { <-stop }()
		if !leak {
			s.Cleanup(func() { close(stop) })
		}
		s.finish()
		if s.failed() != leak {
			t.Errorf("leak %v: VerifyNone failed = %v", leak, s.failed())
		}
		if leak {
			close(stop)
		}
	}
}
