package sdk_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// suppFile is the valgrind suppression file shipped with the library.
const suppFile = "valgrind/libedrpack.supp"

// suppPatterns returns the fun: patterns of the suppressions of kind (a
// memcheck kind: "Cond", "Addr8", ...) as regular expressions.
func suppPatterns(t *testing.T, kind string) []*regexp.Regexp {
	t.Helper()
	b, err := os.ReadFile(suppFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []*regexp.Regexp
	lines := strings.Split(string(b), "\n")
	for i := range lines {
		if strings.TrimSpace(lines[i]) != "Memcheck:"+kind || i+1 >= len(lines) {
			continue
		}
		fun, ok := strings.CutPrefix(strings.TrimSpace(lines[i+1]), "fun:")
		if !ok {
			continue
		}
		// valgrind's globs: * any run, ? one character
		re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(fun)) + "$"
		out = append(out, regexp.MustCompile(re))
	}
	return out
}

func matchesAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// ourC are the C functions of the library itself (edr_pack.c, and the
// stubs cgo writes for its exports) and ELF boilerplate: errors there are
// ours and must not be suppressed.
var ourC = regexp.MustCompile(`^(edr_.*|edrgo_.*|err_key_make|tls_set|tls_err|keep|checked|_init|_fini|frame_dummy|register_tm_clones|deregister_tm_clones|__do_global_dtors_aux)$`)

// TestValgrindSuppressionsCoverGo: sdk/valgrind/libedrpack.supp covers a
// function of every Go package the library is built from, and every
// function of the library without a package prefix (the toolchain's
// assembly, runtime/cgo's C) except the library's own C; and it covers no
// function of the library's own C. A new dependency or Go release that
// adds a routine fails here, not in a user's valgrind run.
func TestValgrindSuppressionsCoverGo(t *testing.T) {
	k := getKit(t)
	res := suppPatterns(t, "Cond")
	if len(res) == 0 {
		t.Fatal("no Cond suppressions")
	}
	out, err := run("..", []string{"CGO_ENABLED=1"}, "go", "list", "-deps", "./sdk/libedrpack")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(out) {
		if p == "C" {
			continue
		}
		fn := p + ".F"
		if p == "github.com/edr-lite/edr-lite/sdk/libedrpack" {
			fn = "main.F" // a main package's functions are main.*
		}
		if !matchesAny(res, fn) {
			t.Errorf("package %s: no suppression matches its functions (%s)", p, fn)
		}
	}
	if _, err := exec.LookPath("nm"); err != nil {
		t.Log("no nm (binutils): the library's symbols are not checked")
		return
	}
	syms, err := run(k.dir, nil, "nm", k.lib)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(syms))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || (f[1] != "t" && f[1] != "T") || strings.Contains(f[2], ".") {
			continue
		}
		n++
		switch sym := f[2]; {
		case ourC.MatchString(sym) && matchesAny(res, sym):
			t.Errorf("%s is the library's own C: a suppression hides its errors", sym)
		case !ourC.MatchString(sym) && !matchesAny(res, sym):
			t.Errorf("%s (no package prefix, not the library's C): no suppression matches it", sym)
		}
	}
	if n < 50 {
		t.Errorf("only %d text symbols without a package prefix in %s", n, k.lib)
	}
}

// TestValgrind (issue #34, item 3): C programs using the library run under
// valgrind's memcheck with sdk/valgrind/libedrpack.supp with 0 errors
// (without it, a run reading the demo dump reports thousands, all in the
// Go runtime and Go code), leaks counted; and errors in the program's own
// C (a use after free, a branch on uninitialised memory) are still
// reported through the suppressions.
func TestValgrind(t *testing.T) {
	k := getKit(t)
	vg, err := exec.LookPath("valgrind")
	if err != nil {
		t.Skip("no valgrind (apt-get install valgrind): the library's valgrind suppressions are not tried")
	}
	supp, err := filepath.Abs(suppFile)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	type result struct {
		errors, suppressed int
		log                string
	}
	memcheck := func(args ...string) result {
		f, err := os.CreateTemp(tmp, "vg-*.log")
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		logf := f.Name()
		vgArgs := append([]string{"--error-limit=no", "--suppressions=" + supp, "--leak-check=full",
			"--errors-for-leak-kinds=definite,indirect,possible", "--log-file=" + logf, k.cplain}, args...)
		out, err := run(k.dir, nil, vg, vgArgs...)
		b, _ := os.ReadFile(logf)
		if err != nil {
			t.Errorf("valgrind %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		var r result
		r.log = string(b)
		m := regexp.MustCompile(`ERROR SUMMARY: (\d+) errors from \d+ contexts \(suppressed: (\d+) from`).FindStringSubmatch(r.log)
		if m == nil {
			t.Fatalf("valgrind %s: no error summary in\n%s", strings.Join(args, " "), r.log)
		}
		fmt.Sscan(m[1], &r.errors)
		fmt.Sscan(m[2], &r.suppressed)
		return r
	}
	// A run whose only errors are uninitialised values (no invalid access,
	// no leak) is run again, up to three times: memcheck, which does not
	// know Go's stacks, sometimes marks a value the library computed on a
	// goroutine stack undefined, and what C then prints of it is reported
	// (docs/sdk.md, "Valgrind"; 2 of 4 runs of this test on a loaded
	// machine). Such a report does not repeat on the same input; a bug of
	// the library's C or of the program does, in every try.
	memcheckTries := func(args ...string) result {
		var r result
		for try := 1; try <= 3; try++ {
			r = memcheck(args...)
			if r.errors == 0 || !onlyUninitialised(r.log) {
				return r
			}
			t.Logf("valgrind %s, try %d: %d errors, all uninitialised values (memcheck and Go's stacks); trying again", strings.Join(args, " "), try, r.errors)
		}
		return r
	}
	runs := [][]string{{"summary", k.demo}, {"summary", k.demoMC}, {"fd", k.rec}, {"misuse", k.demo},
		{"filter", k.demo, "-", "-", "vehicle/*"}, {"typed", filepath.Join(tmp, "typed.pack")}, {"threads", "4"}}
	results := make([]result, len(runs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, args := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = memcheckTries(args...)
		}()
	}
	wg.Wait()
	suppressed := 0
	for i, r := range results {
		suppressed += r.suppressed
		t.Logf("%s: %d errors, %d suppressed", strings.Join(runs[i], " "), r.errors, r.suppressed)
		if r.errors != 0 {
			t.Errorf("valgrind %s: %d errors not suppressed:\n%s", strings.Join(runs[i], " "), r.errors, r.log)
		}
	}
	if suppressed == 0 {
		t.Error("nothing was suppressed: is the file read, does memcheck still see the Go runtime?")
	}
	bug := memcheck("bug")
	if bug.errors < 2 || !strings.Contains(bug.log, "mode_bug") || !strings.Contains(bug.log, "Invalid read") ||
		!strings.Contains(bug.log, "uninitialised") {
		t.Errorf("the program's own memory errors are not reported through the suppressions (%d errors):\n%s", bug.errors, bug.log)
	}
}

// onlyUninitialised reports whether every error in a memcheck log is a use
// of an uninitialised value (no invalid read, write or free, no leak, no
// system call given uninitialised bytes).
func onlyUninitialised(log string) bool {
	n := 0
	for _, line := range strings.Split(log, "\n") {
		_, msg, ok := strings.Cut(line, "== ")
		if !ok || msg == "" || strings.HasPrefix(msg, " ") {
			continue
		}
		switch {
		case strings.HasPrefix(msg, "Conditional jump or move depends on uninitialised value"),
			strings.HasPrefix(msg, "Use of uninitialised value of size"):
			n++
		case strings.HasPrefix(msg, "Invalid "), strings.Contains(msg, "are definitely lost"), strings.Contains(msg, "are possibly lost"),
			strings.Contains(msg, "are indirectly lost"), strings.HasPrefix(msg, "Syscall param"), strings.HasPrefix(msg, "Mismatched free"),
			strings.HasPrefix(msg, "Source and destination overlap"), strings.HasPrefix(msg, "Argument 'size'"):
			return false
		}
	}
	return n > 0
}

func TestOnlyUninitialised(t *testing.T) {
	uninit := "==1== Use of uninitialised value of size 8\n==1==    at 0x1: printf\n==1== Conditional jump or move depends on uninitialised value(s)\n==1== ERROR SUMMARY: 2 errors from 2 contexts"
	for log, want := range map[string]bool{
		uninit: true,
		uninit + "\n==1== Invalid read of size 1\n==1==    at 0x2: mode_bug":              false,
		uninit + "\n==1== 16 bytes in 1 blocks are definitely lost in loss record 1 of 1": false,
		"==1== Syscall param write(buf) points to uninitialised byte(s)":                  false,
		"==1== ERROR SUMMARY: 0 errors from 0 contexts":                                   false,
	} {
		if got := onlyUninitialised(log); got != want {
			t.Errorf("onlyUninitialised(%q) = %v, want %v", log, got, want)
		}
	}
}
