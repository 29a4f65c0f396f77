// Package sdk is the room of edr-lite's pack-sdk for C, C++ and Python: the
// C library (libedrpack/, a cgo main package built with -buildmode=c-shared
// or c-archive), its hand-written header (include/edr_pack.h), the
// header-only C++ wrapper (include/edr_pack.hpp), the valgrind
// suppressions (valgrind/libedrpack.supp), the C and C++ test programs
// (test/), the Python package (python/edrpack, ctypes; its wheel builder
// python/_build, its tests python/tests) and the build script (build.sh). This package itself holds only the tests that
// build the library and the programs and compare what they read with the Go
// API and the edr-lite binary; docs/sdk.md is the reference.
//
// It is not for Go programs: they import pack (and mcap) directly.
//
// # Caveats
//
// The tests need a C compiler with AddressSanitizer (cc, c++; CC and CXX
// override them) and skip, saying so, when there is none; the Python tests
// need python3 ($PYTHON overrides it; the wheel's, python3-venv, and numpy
// for to_numpy: their tests say what they skip), the valgrind test valgrind.
// They build into a temporary directory and take about a minute (the
// library, the binary, a demo run).
package sdk
