// Package units parses and formats the byte sizes ("256MiB", "1.5GB") and
// durations ("15s", "500ms", "2d") that appear in configuration and on the
// command line.
//
// It is not for: anything with a unit other than bytes or time.
//
// # Caveats
//
// The functions are pure and safe for concurrent use. Decimal units (KB, MB)
// are powers of 1000, binary ones (KiB, or the bare K, M, G, T) powers of 1024.
package units
