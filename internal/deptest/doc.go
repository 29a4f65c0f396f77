// Package deptest holds the tests that keep the house in order: which
// packages may import what (ARCHITECTURE.md, "Rooms"), and that every
// document a code comment cites is a file of this repository. It has no
// code of its own.
//
// It is not for: anything at run time.
//
// # Caveats
//
// The test shells out to "go list -deps", so it needs the go command (as
// every test run has).
package deptest
