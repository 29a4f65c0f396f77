package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/hostile"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

// Limits every verb is held to on every hostile input.
const (
	hostileAS      uint64 = 3 << 30         // RLIMIT_AS of the child (the Go runtime reserves ~1.7 GB of address space at start)
	hostileMaxRSS         = 256 << 20       // peak resident set (wait4 ru_maxrss)
	hostileMaxTime        = 5 * time.Second // CPU time (user + system) of the child
	// hostileHang is the wall time after which a child is killed as hung:
	// generous, so that a loaded machine never trips it; the work bound is
	// hostileMaxTime of CPU, which load does not inflate.
	hostileHang = 60 * time.Second
)

// limitASEnv makes the test binary a launcher (see execLimited).
const limitASEnv = "EDR_TEST_EXEC_RLIMIT_AS"

// execLimited is the launcher half of runLimited: when the test binary was
// started with limitASEnv set, it limits its address space, runs the
// command in os.Args[1:] as its child (standard output and error passed through,
// killed if the launcher dies), writes the child's peak RSS in bytes (from
// wait4) to file descriptor 3 and exits with the child's status. It returns
// only when the variable is not set.
//
// Why a launcher that forks again: ru_maxrss of a process created by
// vfork+exec from the test process starts at the test process's own peak
// (the kernel folds the old mm's high-water mark in at exec), which is
// hundreds of MB after generating the corpus. The launcher starts small,
// so its child's figure is the verb's own (plus the few MB the launcher
// had when it forked).
func execLimited() {
	v := os.Getenv(limitASEnv)
	if v == "" {
		return
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err == nil {
		err = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: n, Max: n})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		os.Exit(127)
	}
	os.Unsetenv(limitASEnv)
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Run()
	report := os.NewFile(3, "report")
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && report != nil {
		fmt.Fprintln(report, int64(ru.Maxrss)<<10, ru.Utime.Nano()+ru.Stime.Nano())
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			fmt.Fprintln(os.Stderr, "launcher: child killed by", ws.Signal())
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(ee.ExitCode())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		os.Exit(127)
	}
	os.Exit(0)
}

// limitedRun is what one child did.
type limitedRun struct {
	code   int // -1: killed as hung (hostileHang)
	stderr string
	stdout string        // the first 16 KiB
	rss    int64         // peak resident bytes
	cpu    time.Duration // user + system
	took   time.Duration // wall
}

// runLimited runs the built binary with args under an address-space limit
// and a hang limit (killed after hostileHang of wall time), output to /dev/null.
func runLimited(t *testing.T, args ...string) limitedRun {
	t.Helper()
	out := &headWriter{n: 16 << 10}
	r := runMeasured(t, out, args...)
	r.stdout = out.b.String()
	return r
}

// runMeasured is runLimited with the child's standard output written to
// stdout. The peak RSS it reports is the binary's own: a child the test
// process starts directly inherits the test process's high-water mark
// (Go forks with CLONE_VM, and exec keeps the old mapping's peak), so the
// binary runs under a small re-executed copy of the test binary that
// reports its child's rusage.
func runMeasured(t *testing.T, stdout io.Writer, args ...string) limitedRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostileHang)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{edrBinary(t)}, args...)...)
	cmd.Env = append(os.Environ(), limitASEnv+"="+strconv.FormatUint(hostileAS, 10))
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd.ExtraFiles = []*os.File{pw}
	var errb strings.Builder
	cmd.Stderr, cmd.Stdout = &errb, stdout
	start := time.Now()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	r := limitedRun{took: time.Since(start), stderr: errb.String()}
	rep, _ := io.ReadAll(pr)
	var cpuNs int64
	fmt.Sscan(string(rep), &r.rss, &cpuNs)
	r.cpu = time.Duration(cpuNs)
	switch ee := err.(type) {
	case nil:
	case *exec.ExitError:
		r.code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		r.code = -1
	}
	return r
}

// headWriter keeps the first n bytes written to it.
type headWriter struct {
	b strings.Builder
	n int
}

func (w *headWriter) Write(p []byte) (int, error) {
	if k := min(len(p), w.n-w.b.Len()); k > 0 {
		w.b.Write(p[:k])
	}
	return len(p), nil
}

// hostileVerbs are every offline verb, as run on one input IN (OUT: where
// it writes; DIR: a directory holding only IN; EXT: mcap for an MCAP input,
// else pack — recover writes the input's format).
var hostileVerbs = [][]string{
	{"info", "IN"},
	{"info", "--json", "IN"},
	{"cat", "IN"},
	{"cat", "--jsonl", "IN"},
	{"cat", "--decode", "IN"},
	{"verify", "IN"},
	{"list", "attachments", "IN"},
	{"recover", "IN", "-o", "OUT.EXT"},
	{"merge", "IN", "-o", "OUT.pack"},
	{"export", "--format", "jsonl", "IN", "-o", "OUT.jsonl"},
	{"export", "--format", "mcap", "IN", "-o", "OUT.mcap"},
	{"import", "--format", "jsonl", "IN", "-o", "OUT.pack"},
	{"replay", "IN", "-o", "discard", "--asfast"},
	{"replay", "IN", "-o", "udp:127.0.0.1:9", "--asfast"},
	{"rules", "test", "--rules", "builtin:manual", "--allow-empty", "IN"}, // the corpus holds no driver/button: what is tried is the read
	{"ls", "DIR"},
}

// TestHostileInputs runs every offline verb on every case of the hostile
// corpus (internal/hostile) in a child process under a 3 GiB address-space
// limit: no panic or runtime dump, exit 1 with a message naming the file
// (exit 0 for a valid input; for a damaged one verify must say 1, the
// other verbs may read what is intact), peak RSS at most 256 MiB and at
// most 5 s each.
func TestHostileInputs(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("the corpus' time and memory bounds do not hold under the race detector: it runs in the plain test step (the readers' own packages run under -race)")
	}
	edrBinary(t)
	root := t.TempDir()
	cases := hostile.Cases()
	if s := os.Getenv("HOSTILE_CASES"); s != "" { // a subset, by name substring
		var sub []hostile.Case
		for _, c := range cases {
			if strings.Contains(c.Name, s) {
				sub = append(sub, c)
			}
		}
		cases = sub
	}
	var mu sync.Mutex
	var table []string
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, c := range cases {
		dir := filepath.Join(root, fmt.Sprint(i))
		os.Mkdir(dir, 0o700)
		in, err := c.Write(dir)
		if err != nil {
			t.Fatal(err)
		}
		ext := "pack"
		if strings.HasSuffix(in, ".mcap") {
			ext = "mcap"
		}
		for j, v := range hostileVerbs {
			out := filepath.Join(root, fmt.Sprintf("out-%d-%d", i, j))
			args := make([]string, len(v))
			for k, a := range v {
				a = strings.ReplaceAll(a, "EXT", ext)
				a = strings.ReplaceAll(a, "IN", in)
				a = strings.ReplaceAll(a, "OUT", out)
				args[k] = strings.ReplaceAll(a, "DIR", dir)
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				r := runLimited(t, args...)
				verb := strings.Join(v, " ")
				mu.Lock()
				table = append(table, fmt.Sprintf("%-40s %-45s exit %2d  %4d MiB  %6v CPU  %6v wall", c.Name, verb, r.code, r.rss>>20, r.cpu.Round(time.Millisecond), r.took.Round(time.Millisecond)))
				mu.Unlock()
				if msg := judge(c, v, r); msg != "" {
					t.Errorf("%s (%s): %s: %s\n%s%s", c.Name, c.Want, verb, msg, tail(r.stdout, 300), tail(r.stderr, 600))
				}
				os.RemoveAll(out + ".pack")
				os.RemoveAll(out + ".jsonl")
				os.RemoveAll(out + ".mcap")
			}()
		}
	}
	wg.Wait()
	if testing.Verbose() {
		t.Logf("case / verb / exit / peak RSS / time:\n%s", strings.Join(table, "\n"))
	}
}

// judge returns what is wrong with run r of verb v on case c, or "".
func judge(c hostile.Case, v []string, r limitedRun) string {
	switch {
	case r.code == -1:
		return fmt.Sprintf("killed after %v", r.took.Round(time.Millisecond))
	case strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "fatal error"):
		return "panic or runtime error"
	case r.cpu > hostileMaxTime:
		return fmt.Sprintf("took %v of CPU (%v wall)", r.cpu.Round(time.Millisecond), r.took.Round(time.Millisecond))
	case r.rss > hostileMaxRSS:
		return fmt.Sprintf("peak RSS %d MiB", r.rss>>20)
	case r.code != 0 && r.code != 1:
		return fmt.Sprintf("exit %d", r.code)
	case r.code == 1 && !strings.Contains(r.stderr+r.stdout, c.Name):
		return "exit 1 without naming the file"
	}
	jsonl := strings.HasSuffix(c.Name, ".jsonl")
	switch {
	case v[0] == "ls":
		return ""
	case v[0] == "import" && !jsonl, v[0] == "verify" && jsonl,
		v[0] == "recover" && !strings.HasSuffix(c.Name, ".pack") && !strings.HasSuffix(c.Name, ".mcap"):
		if r.code != 1 {
			return "exit 0 on an input of another format"
		}
		return ""
	}
	switch c.Want {
	case hostile.Valid:
		if r.code != 0 {
			return "exit 1 on a valid input"
		}
	case hostile.Refused:
		if r.code != 1 {
			return "exit 0 on an input that is no dump"
		}
	case hostile.Damaged:
		if v[0] == "verify" && r.code != 1 {
			return "verify passed a damaged file"
		}
	case hostile.Heavy:
		if v[0] == "verify" && r.code != 0 {
			return "verify failed a valid file"
		}
		if r.code == 1 && !strings.Contains(r.stderr+r.stdout, "--max-memory") {
			return "exit 1 without saying how to raise the memory limit"
		}
	}
	return ""
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
