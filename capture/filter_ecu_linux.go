//go:build ecu

package capture

import "errors"

// errFilterNotBuilt is what attachFilter of the ECU build returns.
var errFilterNotBuilt = errors.New(NotBuiltFilter)

// attachFilter: the ECU build has no eBPF socket filter (filter_ecu.go);
// the configuration check refuses one before a socket is opened. A Filter
// that is not valid is ErrFilter, as in the full build.
func attachFilter(_ int, f *Filter) error {
	if err := f.Validate(); err != nil {
		return err
	}
	return errFilterNotBuilt
}
