#!/usr/bin/env bash
# Builds libedrpack, edr-lite's pack-sdk for C, C++ and Python, for
# linux/amd64 and linux/arm64: the shared library (libedrpack.so), the static
# archive (libedrpack.a, link with -lpthread -ldl -lm), the C header, the C++
# wrapper, the valgrind suppressions and the Python wheel (the library
# inside), one directory per platform:
#
#   OUT/linux_amd64/{libedrpack.so,libedrpack.a,edr_pack.h,edr_pack.hpp,libedrpack.supp,
#                    edrpack-V-py3-none-manylinux_2_N_x86_64.whl}
#   OUT/linux_arm64/... (edrpack-V-py3-none-manylinux_2_N_aarch64.whl)
#
# Each library is then linked with the C and C++ test programs (-Wall
# -Werror) by the platform's compiler, so a header or ABI slip fails here.
# Cross builds need the target's C compiler: gcc-aarch64-linux-gnu and
# g++-aarch64-linux-gnu on amd64 (gcc-x86-64-linux-gnu, g++-x86-64-linux-gnu
# on arm64). The tests that run the library are in sdk/sdk_test.go (go test
# ./sdk/...). docs/sdk.md describes all of it.
#
# Usage: sdk/build.sh [OUT]            (default: out/sdk)
#        PLATFORMS="linux/amd64" sdk/build.sh    (a subset)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
out="${1:-out/sdk}"
host="$(go env GOOS)/$(go env GOARCH)"
platforms="${PLATFORMS:-linux/amd64 linux/arm64}"

# cross_prefix ARCH: the GNU triplet of a cross compiler for linux/ARCH.
cross_prefix() {
	case "$1" in
	amd64) echo x86_64-linux-gnu ;;
	arm64) echo aarch64-linux-gnu ;;
	*) echo "sdk/build.sh: no cross compiler known for $1" >&2; return 1 ;;
	esac
}

for p in $platforms; do
	os="${p%/*}" arch="${p#*/}"
	dir="$out/${os}_${arch}"
	mkdir -p "$dir"
	if [ "$p" = "$host" ]; then
		cc="${CC:-cc}" cxx="${CXX:-c++}"
	else
		pre="$(cross_prefix "$arch")"
		cc="$pre-gcc" cxx="$pre-g++"
	fi
	command -v "$cc" >/dev/null || { echo "sdk/build.sh: $p needs the C compiler $cc" >&2; exit 1; }
	echo "--- $p (CC=$cc)"
	export CGO_ENABLED=1 GOOS="$os" GOARCH="$arch" CC="$cc" CXX="$cxx"
	go build -trimpath -buildmode=c-shared -o "$dir/libedrpack.so" ./sdk/libedrpack
	go build -trimpath -buildmode=c-archive -o "$dir/libedrpack.a" ./sdk/libedrpack
	rm -f "$dir/libedrpack.h" # cgo's generated header: edr_pack.h is the interface
	cp sdk/include/edr_pack.h sdk/include/edr_pack.hpp sdk/valgrind/libedrpack.supp "$dir/"
	# the Python package as a wheel, the library inside, tagged for this
	# platform (manylinux_2_N_x86_64 / _aarch64)
	rm -f "$dir"/edrpack-*.whl
	python3 sdk/python/_build/edrpack_build.py --lib "$dir/libedrpack.so" --out "$dir" >/dev/null
	"$cc" -std=c99 -Wall -Wextra -Werror -O2 -Isdk/include sdk/test/edrpack_test.c -L"$dir" -ledrpack -lpthread -o "$dir/edrpack_test"
	"$cc" -std=c99 -Wall -Wextra -Werror -O2 -Isdk/include sdk/test/edrpack_test.c "$dir/libedrpack.a" -lpthread -ldl -lm -o "$dir/edrpack_test_static"
	if command -v "$cxx" >/dev/null; then
		"$cxx" -std=c++17 -Wall -Wextra -Werror -O2 -Isdk/include sdk/test/edrpack_test.cc -L"$dir" -ledrpack -o "$dir/edrpack_test_cc"
		"$cxx" -std=c++17 -Wall -Wextra -Werror -O2 -Isdk/include sdk/test/edrpack_wrapper_test.cc -L"$dir" -ledrpack -o "$dir/edrpack_wrapper_test"
	else
		echo "($cxx not installed: the C++ program is not linked for $p)"
	fi
	unset GOOS GOARCH CC CXX
	# Smoke run: write a file through the C API, read it back, misuse it.
	# Natively, or under qemu-user for the other architecture when present.
	run=()
	if [ "$p" != "$host" ]; then
		qemu=""
		case "$arch" in arm64) qemu=qemu-aarch64-static ;; amd64) qemu=qemu-x86_64-static ;; esac
		if command -v "$qemu" >/dev/null; then
			run=("$qemu" -L "/usr/$(cross_prefix "$arch")")
		else
			echo "($qemu not installed: $p is built and linked, not run)"
			ls -l "$dir"
			continue
		fi
	fi
	smoke="$(mktemp -d)"
	LD_LIBRARY_PATH="$dir" "${run[@]}" "$dir/edrpack_test" write "$smoke/smoke.pack" >/dev/null
	LD_LIBRARY_PATH="$dir" "${run[@]}" "$dir/edrpack_test" summary "$smoke/smoke.pack" | grep -q '^frames 20 messages 60$'
	"${run[@]}" "$dir/edrpack_test_static" misuse "$smoke/smoke.pack" | grep -q 'misuse ok'
	if [ -x "$dir/edrpack_test_cc" ]; then
		LD_LIBRARY_PATH="$dir" "${run[@]}" "$dir/edrpack_test_cc" "$smoke/smoke.pack" | grep -q '^frames 20 messages 60$'
		LD_LIBRARY_PATH="$dir" "${run[@]}" "$dir/edrpack_wrapper_test" typed "$smoke/typed.pack" | grep -q '^typed ok$'
	fi
	if [ "$p" = "$host" ] && python3 -c 'import venv, ensurepip' 2>/dev/null; then
		# the wheel installs offline into a fresh venv and reads the smoke file
		python3 -m venv "$smoke/venv"
		"$smoke/venv/bin/python" -m pip install -q --no-index --no-deps "$dir"/edrpack-*.whl
		"$smoke/venv/bin/python" -I -c 'import edrpack, sys; print(sum(1 for _ in edrpack.Dump(sys.argv[1]).iter_messages()))' "$smoke/smoke.pack" | grep -q '^60$'
	fi
	rm -rf "$smoke"
	echo "smoke run ok${run:+ (under ${run[0]})}"
	ls -l "$dir"
done
