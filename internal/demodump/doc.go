// Package demodump writes dumps for the tests and benchmarks of the
// report: a demo-like dump (the demo vehicle's topics as packed structs, a
// foxglove.CompressedImage JPEG camera, a latched JSON calibration, one
// hard-brake trigger, a camera gap with losses) in pack or MCAP, and large
// synthetic dumps (N topics at a rate for a duration) for the report's
// benchmark. Times and bytes are the same on every run.
//
// It is not for: production code; nothing outside tests imports it.
//
// # Caveats
//
// Pack dumps carry topic type names only, so a report of a pack demo dump
// needs the layouts (Layouts) as --schema overrides; the MCAP demo dump
// records every topic's message encoding and schema itself.
package demodump
