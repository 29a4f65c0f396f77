package sdk_test

import (
	"archive/zip"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/edr-lite/edr-lite/pack"
)

// wheelKit is the edrpack wheel built from the kit's library and a fresh
// virtual environment it is installed into (made once per run).
type wheelKit struct {
	wheel  string // the .whl
	python string // the venv's python
	numpy  bool   // numpy importable there (Debian's python3-numpy through --system-site-packages)
}

var (
	wheelOnce sync.Once
	theWheel  *wheelKit
	wheelErr  error
	wheelSkip string
)

// pythonExe is the python3 the wheel tests use: $PYTHON, else python3.
func pythonExe() string {
	if p := os.Getenv("PYTHON"); p != "" {
		return p
	}
	return "python3"
}

// getWheel builds the wheel the way sdk/build.sh does and installs it,
// offline, into a fresh venv; it skips when there is no python3 with venv.
func getWheel(t *testing.T, k *kit) *wheelKit {
	t.Helper()
	w := maybeWheel(t, k)
	if w == nil {
		t.Skip(wheelSkip)
	}
	return w
}

// maybeWheel is getWheel that returns nil (and logs why) instead of
// skipping: for tests that also run C and C++ programs.
func maybeWheel(t *testing.T, k *kit) *wheelKit {
	t.Helper()
	wheelOnce.Do(func() {
		py, err := exec.LookPath(pythonExe())
		if err != nil {
			wheelSkip = "no python3: the wheel is not tried"
			return
		}
		if _, err := run(k.dir, nil, py, "-c", "import venv, ensurepip"); err != nil {
			wheelSkip = "python3 has no venv/ensurepip (apt-get install python3-venv): the wheel is not tried"
			return
		}
		root, _ := filepath.Abs("..")
		out := filepath.Join(k.dir, "wheel")
		w := &wheelKit{}
		got, err := run(root, nil, py, "sdk/python/_build/edrpack_build.py", "--lib", k.lib, "--out", out)
		if err != nil {
			wheelErr = err
			return
		}
		w.wheel = strings.TrimSpace(got)
		venv := filepath.Join(k.dir, "venv")
		if _, err := run(k.dir, nil, py, "-m", "venv", "--system-site-packages", venv); err != nil {
			wheelErr = err
			return
		}
		w.python = filepath.Join(venv, "bin", "python")
		// offline, the wheel alone: PyPI is never asked
		if _, err := run(k.dir, []string{"PIP_NO_INDEX=1"}, w.python, "-m", "pip", "install", "--no-index", "--no-deps", w.wheel); err != nil {
			wheelErr = err
			return
		}
		_, err = run(k.dir, nil, w.python, "-I", "-c", "import numpy")
		w.numpy = err == nil
		theWheel = w
	})
	if wheelSkip != "" {
		t.Log(wheelSkip)
		return nil
	}
	if wheelErr != nil {
		t.Fatal(wheelErr)
	}
	return theWheel
}

// runner runs one of the programs the cross-language tests compare: the
// C program, the C++ wrapper's, or the installed Python package's check
// script; the modes print the same lines.
type runner struct {
	name string
	run  func(args ...string) string
}

// runners returns the C, C++ and (when the wheel installs) Python runners.
func runners(t *testing.T, k *kit) []runner {
	t.Helper()
	rs := []runner{{"C", func(a ...string) string { return cRun(t, k, k.ctest, a...) }},
		{"C++", func(a ...string) string { return cRun(t, k, k.hpp, a...) }}}
	if w := maybeWheel(t, k); w != nil {
		rs = append(rs, runner{"Python", func(a ...string) string { return w.pyCheck(t, k, a...) }})
	}
	return rs
}

// pyCheck runs sdk/python/edrpack_check.py with the venv's python in
// isolated mode (-I: the installed package, not the source tree's).
func (w *wheelKit) pyCheck(t *testing.T, k *kit, args ...string) string {
	t.Helper()
	script, _ := filepath.Abs("python/edrpack_check.py")
	out, err := run(k.dir, nil, w.python, append([]string{"-I", script}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPythonWheel (issue #34, item 5): sdk/python/_build/edrpack_build.py
// (what sdk/build.sh runs) makes a wheel holding the package and the
// library, tagged manylinux_2_N for the library's machine and the newest
// glibc it needs; it installs offline into a fresh virtual environment,
// and the package's own tests (sdk/python/tests) pass there against the
// installed package. Before, `pip install sdk/python` failed: there was no
// package to install.
func TestPythonWheel(t *testing.T) {
	k := getKit(t)
	w := getWheel(t, k)
	name := filepath.Base(w.wheel)
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	m := regexp.MustCompile(`^edrpack-(\d+\.\d+\.\d+)-py3-none-manylinux_2_(\d+)_(\w+)\.whl$`).FindStringSubmatch(name)
	if m == nil || m[3] != arch {
		t.Fatalf("wheel %s: want edrpack-V-py3-none-manylinux_2_N_%s.whl", name, arch)
	}
	// the tag's glibc is the newest version the library needs
	ef, err := elf.Open(k.lib)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := ef.DynamicSymbols()
	newest := 0
	for _, s := range syms {
		var minor int
		if _, err := fmt.Sscanf(s.Version, "GLIBC_2.%d", &minor); err == nil && minor > newest {
			newest = minor
		}
	}
	ef.Close()
	if m[2] != fmt.Sprint(newest) {
		t.Errorf("wheel tagged manylinux_2_%s, the library needs GLIBC_2.%d", m[2], newest)
	}
	z, err := zip.OpenReader(w.wheel)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range z.File {
		files = append(files, f.Name)
	}
	z.Close()
	dist := "edrpack-" + m[1] + ".dist-info/"
	for _, want := range []string{"edrpack/__init__.py", "edrpack/libedrpack.so", dist + "METADATA", dist + "WHEEL", dist + "RECORD"} {
		if !strings.Contains(strings.Join(files, "\n")+"\n", want+"\n") {
			t.Errorf("wheel %s: no %s in %v", name, want, files)
		}
	}
	// the installed package is what runs, with its own library
	where := w.pyCheck(t, k, "where")
	// edr_version: the API, and the pack format version the library writes (pack's constants)
	version := fmt.Sprintf("library libedrpack 2 (edr-lite pack format %d.%d)\n", pack.FormatMajor, pack.FormatMinor)
	if !strings.Contains(where, filepath.Join(k.dir, "venv")) || !strings.Contains(where, version) {
		t.Errorf("the venv's edrpack: %s", where)
	}
	// the package's tests, in the venv, importing the installed package
	tests, _ := filepath.Abs("python/tests")
	cwd := t.TempDir()
	out, err := run(cwd, []string{"EDRPACK_EXPECT_INSTALLED=1"}, w.python, "-I", "-m", "unittest", "discover", "-v", "-s", tests, "-t", tests)
	if err != nil {
		t.Fatalf("the package's tests in the venv: %v", err)
	}
	t.Logf("numpy in the venv: %v", w.numpy)
	if w.numpy && strings.Contains(out, "skipped") {
		t.Errorf("numpy is there but tests skipped:\n%s", out)
	}
}

// TestPythonInstallFromSource: `pip install sdk/python` builds and
// installs the package offline through the in-tree backend (no setuptools,
// no index), shipping the library $EDRPACK_LIB names.
func TestPythonInstallFromSource(t *testing.T) {
	k := getKit(t)
	getWheel(t, k) // a python with venv
	py, _ := exec.LookPath(pythonExe())
	venv := filepath.Join(t.TempDir(), "venv")
	if _, err := run(k.dir, nil, py, "-m", "venv", venv); err != nil {
		t.Fatal(err)
	}
	src, _ := filepath.Abs("python")
	vpy := filepath.Join(venv, "bin", "python")
	if out, err := run(t.TempDir(), []string{"EDRPACK_LIB=" + k.lib, "PIP_NO_INDEX=1"}, vpy, "-m", "pip", "install", "--no-index", src); err != nil {
		t.Fatalf("pip install sdk/python: %v\n%s", err, out)
	}
	out, err := run(t.TempDir(), nil, vpy, "-I", "-c", "import edrpack, sys; d = edrpack.Dump(sys.argv[1]); print(edrpack.__file__, len(d.topics()))", k.demo)
	if err != nil || !strings.Contains(out, filepath.Join(venv, "lib")) || !strings.HasSuffix(strings.TrimSpace(out), " 5") {
		t.Fatalf("the installed package: %v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(src, "edrpack", "libedrpack.so")); err == nil {
		t.Error("the build left a library in the source tree")
	}
}
