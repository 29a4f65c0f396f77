// Package bench holds the cross-package benchmarks and the performance gates:
// allocation gates (exactly zero on the ingest path) and speed gates expressed
// as ratios to a baseline measured in the same run (plain copy, a Go
// channel, raw disk writes).
//
// It is not for: library code; it only measures other packages.
package bench
