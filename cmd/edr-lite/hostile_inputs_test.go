package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runVerb runs the binary with args (IN and OUT replaced, EXT by pack),
// bounded by timeout, and returns its exit code and standard error.
func runVerb(t *testing.T, args []string, in, out string, timeout time.Duration) (int, string, time.Duration) {
	t.Helper()
	a := make([]string, len(args))
	for i, s := range args {
		s = strings.ReplaceAll(s, "EXT", "pack")
		s = strings.ReplaceAll(s, "IN", in)
		a[i] = strings.ReplaceAll(s, "OUT", out)
	}
	bin := edrBinary(t) // built before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, a...)
	var errb strings.Builder
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if ctx.Err() != nil {
		return -1, errb.String(), took
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, errb.String(), took
}

// TestOfflineVerbsRefuseNonRegularInputs: a named pipe, a directory and a
// character device given as a file make every offline verb (and config
// check) exit 1 at once with a message saying what the path is; none
// blocks on the pipe or reads the device until memory runs out.
func TestOfflineVerbsRefuseNonRegularInputs(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	sub := filepath.Join(dir, "adir")
	os.Mkdir(sub, 0o700)
	inputs := map[string]string{fifo: "named pipe", sub: "directory", "/dev/zero": "device"}
	var verbs [][]string
	for _, v := range hostileVerbs {
		if v[0] != "ls" { // takes a directory
			verbs = append(verbs, v)
		}
	}
	verbs = append(verbs, []string{"config", "check", "IN"})
	n := 0
	for in, what := range inputs {
		for _, v := range verbs {
			n++
			out := filepath.Join(dir, fmt.Sprintf("out%d", n))
			code, errs, took := runVerb(t, v, in, out, 5*time.Second)
			if code != 1 || !strings.Contains(errs, in) {
				t.Errorf("%v on a %s: exit %d after %v, want 1 naming the path\n%s", v, what, code, took.Round(time.Millisecond), errs)
			}
		}
	}
}
