package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the master, and the path of its slave.
func openPTY(t *testing.T) (*os.File, string) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("needs a pseudo-terminal (/dev/ptmx): %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("ptsname: %v", err)
	}
	return m, fmt.Sprintf("/dev/pts/%d", n)
}

// onTerminal runs the built binary with its stderr on a pseudo-terminal
// and returns what the terminal received and the stdout.
func onTerminal(t *testing.T, args ...string) (term, stdout string) {
	return runOnTerminal(t, false, args...)
}

// runOnTerminal is onTerminal, with the stdout on the terminal too when
// both is set.
func runOnTerminal(t *testing.T, both bool, args ...string) (term, stdout string) {
	t.Helper()
	return binOnTerminal(t, edrBinary(t), both, args...)
}

// binOnTerminal is runOnTerminal of the binary bin.
func binOnTerminal(t *testing.T, bin string, both bool, args ...string) (term, stdout string) {
	t.Helper()
	m, slave := openPTY(t)
	defer m.Close()
	s, err := os.OpenFile(slave, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open %s: %v", slave, err)
	}
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, s
	if both {
		cmd.Stdout = s
	}
	var got bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&got, m); close(done) }() // ends with EIO once the slave is closed everywhere
	err = cmd.Run()
	s.Close()
	<-done
	if err != nil {
		t.Fatalf("%v: %v\nterminal: %q\nstdout: %s", args, err, got.String(), out.String())
	}
	return got.String(), out.String()
}

// finalBar returns the last drawing of the bar described by desc and
// checks that it is at 100% and ends its line.
func finalBar(t *testing.T, term, desc string) string {
	t.Helper()
	i := strings.LastIndex(term, desc)
	if i < 0 {
		t.Fatalf("no %q bar on the terminal: %q", desc, term)
	}
	last := term[i:]
	line, _, ok := strings.Cut(last, "\n")
	if !ok {
		t.Fatalf("the bar does not end its line: %q", last)
	}
	if !strings.Contains(line, " 100% |") {
		t.Errorf("the last bar is not at 100%%: %q", line)
	}
	return line
}

// TestProgressOnTerminal: on a terminal, merge, filter, split and replay
// draw a bar counting messages, and the demo one counting seconds of
// driving; each ends at 100% with its count at the total, on a line of its
// own. Off a terminal (every other test) nothing is drawn.
func TestProgressOnTerminal(t *testing.T) {
	dir := t.TempDir()
	a := writeTestDump(t, dir, "a.pack")
	b := writeTestDump(t, dir, "b.pack")
	count := regexp.MustCompile(`\((\d+)/(\d+)`)
	for _, tc := range []struct {
		desc  string
		args  []string
		total string
	}{
		{"merging (messages)", []string{"merge", a, b, "-o", filepath.Join(dir, "m.pack")}, "220"},
		{"filtering (messages)", []string{"filter", a, "-o", filepath.Join(dir, "f.mcap"), "--from", "100ms"}, "110"},
		{"splitting (messages)", []string{"split", a, "-o", filepath.Join(dir, "s.pack"), "--duration", "500ms"}, "110"},
		{"replaying (messages)", []string{"replay", a, "-o", "discard", "--rate", "4"}, "110"},
		{"driving (s)", []string{"demo", "--dir", filepath.Join(dir, "demo"), "--duration", "4s"}, "4"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			term, _ := onTerminal(t, tc.args...)
			line := finalBar(t, term, tc.desc)
			m := count.FindStringSubmatch(line)
			if m == nil || m[1] != tc.total || m[2] != tc.total {
				t.Errorf("final count %q, want %s/%s", line, tc.total, tc.total)
			}
		})
	}
}

// TestCatOnTerminal: cat --jsonl on a terminal shows hex previews, not
// base64, says so on stderr, and --payload base64 prints the payload whole.
func TestCatOnTerminal(t *testing.T) {
	p := writeTestDump(t, t.TempDir(), "a.pack")
	term, _ := runOnTerminal(t, true, "cat", p, "--jsonl", "--topics", "camera/*", "--limit", "2")
	if !strings.Contains(term, `"data_hex":"00000000000000000000000000000000…"`) || strings.Contains(term, `"data":`) ||
		!strings.Contains(term, "--payload base64 prints them whole") {
		t.Errorf("cat --jsonl on a terminal: %q", term)
	}
	term, _ = runOnTerminal(t, true, "cat", p, "--jsonl", "--topics", "camera/*", "--limit", "1", "--payload", "base64")
	if !strings.Contains(term, `"data":"AAAA`) || strings.Contains(term, "data_hex") {
		t.Errorf("cat --jsonl --payload base64 on a terminal: %q", term)
	}
	_, out := onTerminal(t, "cat", p, "--jsonl", "--topics", "camera/*", "--limit", "1")
	if !strings.Contains(out, `"data":"AAAA`) {
		t.Errorf("cat --jsonl to a pipe: %q", out)
	}
}

// TestECUProgressOnTerminal: the ECU build draws its own bar (it links no
// schollz/progressbar, progress_ecu.go): on a terminal, merge counts
// messages to 100% with the count at the total, on a line of its own.
func TestECUProgressOnTerminal(t *testing.T) {
	bin := ecuBinary(t)
	dir := t.TempDir()
	a := writeTestDump(t, dir, "a.pack")
	b := writeTestDump(t, dir, "b.pack")
	term, _ := binOnTerminal(t, bin, false, "merge", a, b, "-o", filepath.Join(dir, "m.pack"))
	line := finalBar(t, term, "merging (messages)")
	if m := regexp.MustCompile(`\((\d+)/(\d+)\)`).FindStringSubmatch(line); m == nil || m[1] != "220" || m[2] != "220" {
		t.Errorf("final count %q, want 220/220", line)
	}
}
