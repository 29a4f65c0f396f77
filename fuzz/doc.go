// Package fuzz holds the fuzz targets over every parser of untrusted bytes
// (pack files, shm segments, packets, configuration and replay checks
// files, Lua-facing accessors, MP4 files (whole and cut short), the JPEG
// time readers and the JPEG end check, the
// upload queue's journal and ledger, key templates and schedule windows,
// the closed loop's comparison of untrusted outputs, the packed codec of
// an in-process step replay (step.Packed), the report of a dump
// and its camera thumbnails) with their seed corpora under testdata/fuzz.
//
// It is not for: library code.
//
// # Caveats
//
// The seed corpora under testdata/fuzz run as ordinary tests with "go test";
// .ci/run also fuzzes each target for a short time. Crashers found become
// seed files there.
//
// A long run of a target whose every execution writes and maps a file
// (FuzzShmSegment: about 100 µs an input) can show "execs: N (0/sec)" for
// up to a minute at a time: that is Go's fuzzer minimizing an input that
// found new coverage (-fuzzminimizetime, 60 s by default), not a hang in
// the target; perf on the worker shows internal/fuzz's minimizeInput.
// .ci/fuzz passes -fuzzminimizetime 1s.
package fuzz
