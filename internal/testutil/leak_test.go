package testutil

import (
	"testing"
)

// leakSpy records Errorf instead of failing and runs cleanups on demand.
type leakSpy struct {
	testing.TB
	cleanups []func()
	failed   bool
}

func (s *leakSpy) Helper()               {}
func (s *leakSpy) Errorf(string, ...any) { s.failed = true }
func (s *leakSpy) Error(...any)          { s.failed = true }
func (s *leakSpy) Cleanup(f func())      { s.cleanups = append(s.cleanups, f) }
func (s *leakSpy) finish() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

func TestVerifyNone(t *testing.T) {
	// A goroutine that ends with the test (stopped by a later cleanup) is
	// not a leak; one still running after every cleanup is.
	for _, leak := range []bool{false, true} {
		s := &leakSpy{TB: t}
		VerifyNone(s)
		stop := make(chan struct{})
		go func() { <-stop }()
		if !leak {
			s.Cleanup(func() { close(stop) })
		}
		s.finish()
		if s.failed != leak {
			t.Errorf("leak %v: VerifyNone failed = %v", leak, s.failed)
		}
		if leak {
			close(stop)
		}
	}
}
