package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// runBinStdin runs the built binary with stdin read from the file at path.
func runBinStdin(t *testing.T, path string, args ...string) (int, string, string) {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd := exec.Command(edrBinary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// TestCatAndInfoFromStdin: "cat -" and "info -" read a pack dump from
// standard input and print what they print for the file; a damaged stream
// fails with the offset; an offset time needs the file.
func TestCatAndInfoFromStdin(t *testing.T) {
	dir := t.TempDir()
	p := writeTestDump(t, dir, "a.pack")
	for _, args := range [][]string{{"cat", "--jsonl"}, {"cat", "--topics", "camera/*", "--from", "1700000000300000000"}, {"info", "--json"}, {"info"}} {
		code, want, errs := runBin(t, append(args, p)...)
		if code != 0 {
			t.Fatalf("%v FILE: %d %s", args, code, errs)
		}
		code, got, errs := runBinStdin(t, p, append(args, "-")...)
		if code != 0 {
			t.Fatalf("%v - : %d %s", args, code, errs)
		}
		if args[0] == "info" {
			got = strings.Replace(got, `"-"`, `"`+p+`"`, 1)
			got = strings.Replace(got, "path:       -\n", "path:       "+p+"\n", 1)
			// the signature is checked on a file, not on a pipe: it says so
			if !strings.Contains(got, "read from standard input") {
				t.Errorf("%v -: does not say the signature was not checked:\n%s", args, got)
			}
			sig := regexp.MustCompile(`(?m)^signature: .*\n|,"signature":\{[^}]*\}`)
			got, want = sig.ReplaceAllString(got, ""), sig.ReplaceAllString(want, "")
		}
		if got != want || len(got) == 0 {
			t.Errorf("%v: stdin gives\n%s\nthe file gives\n%s", args, got, want)
		}
	}
	b, _ := os.ReadFile(p)
	b[len(b)/2] ^= 0xff
	bad := p + ".bad"
	os.WriteFile(bad, b, 0o644)
	code, _, errs := runBinStdin(t, bad, "cat", "-")
	if code != exitFail || !strings.Contains(errs, "offset") {
		t.Errorf("damaged stream: exit %d, stderr %q", code, errs)
	}
	code, _, errs = runBinStdin(t, p, "cat", "--from", "2s", "-")
	if code != exitUsage {
		t.Errorf("offset time on stdin: exit %d, stderr %q", code, errs)
	}
}
