// Package sdk is the room of edr-lite's pack-sdk for C, C++ and Python: the
// C library (libedrpack/, a cgo main package built with -buildmode=c-shared
// or c-archive), its hand-written header (include/edr_pack.h), the C and
// C++ test programs (test/), the ctypes module (python/edrpack.py) and the
// build script (build.sh). This package itself holds only the tests that
// build the library and the programs and compare what they read with the Go
// API and the edr-lite binary; docs/sdk.md is the reference.
//
// It is not for Go programs: they import pack (and mcap) directly.
//
// # Caveats
//
// The tests need a C compiler with AddressSanitizer (cc, c++; CC and CXX
// override them) and skip, saying so, when there is none; the Python test
// needs python3. They build into a temporary directory and take about a
// minute (the library, the binary, a demo run).
package sdk
