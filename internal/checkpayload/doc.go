// Package checkpayload makes self-checking message payloads for integrity
// stress tests: each carries its sequence number and a CRC32C trailer, so a
// reader can tell a torn or foreign payload from a good one.
//
// It is not for: production framing; it exists for tests and benchmarks.
//
// # Caveats
//
// Fill writes into the caller's buffer and returns a sub-slice of it.
package checkpayload
