// Package fuzz holds the fuzz targets over every parser of untrusted bytes
// (pack files, shm segments, packets, configuration, Lua-facing accessors)
// with their seed corpora under testdata/fuzz.
//
// It is not for: library code.
package fuzz
