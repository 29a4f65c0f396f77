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
			results[i] = memcheck(args...)
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
