//go:build !linux

package dump

// lowerPriority does nothing where thread priorities are not supported.
func lowerPriority() {}
