// Package bench holds the cross-package benchmarks and the performance gates:
// allocation gates (exactly zero on the ingest path) and speed gates expressed
// as ratios to a baseline measured in the same run (plain copy, a Go
// channel, raw disk writes).
//
// The script slowdisk (run as root) runs a built test binary with its
// temporary files on a real disk whose writes the kernel holds to a given
// rate, to measure on this machine what the recorder does on an ECU's
// slower storage (docs/evidence.md, "Cost").
//
// It is not for: library code; it only measures other packages.
//
// # Caveats
//
// The speed gates compare against a baseline measured in the same run and
// keep a margin, but a machine shared with other work can still fail them;
// .ci/run runs this package alone and retries once. Allocation gates are
// built with !race (the race detector allocates).
package bench
