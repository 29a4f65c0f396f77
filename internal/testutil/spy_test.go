package testutil

import "testing"

// spy is a testing.TB that records failures instead of failing, and runs
// its cleanups when told to.
type spy struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (s *spy) Helper()                        {}
func (s *spy) Errorf(format string, _ ...any) { s.errs = append(s.errs, format) }
func (s *spy) Error(...any)                   { s.errs = append(s.errs, "error") }
func (s *spy) Fatal(...any)                   { s.errs = append(s.errs, "fatal") }
func (s *spy) Cleanup(f func())               { s.cleanups = append(s.cleanups, f) }
func (s *spy) failed() bool                   { return len(s.errs) > 0 }

// finish runs the cleanups, last registered first.
func (s *spy) finish() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}
