package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeBlock is one shell block of the README's walk-throughs.
type readmeBlock struct {
	section string
	line    int      // of its opening fence
	text    string   // the commands
	needs   []string // programs it needs (<!-- needs: P, Q (why) -->)
	why     string
	outputs []string // "#   TEXT" lines: what the commands print ("…": anything)
}

// walkThrough tells the README's sections whose shell blocks run as
// written: "Try it" and every "Walk-through: …".
func walkThrough(heading string) bool {
	return heading == "Try it" || strings.HasPrefix(heading, "Walk-through:")
}

var (
	needsRE  = regexp.MustCompile(`^<!-- needs: ([^()]+?)\s*\((.+)\)\s*-->$`)
	outputRE = regexp.MustCompile(`^\s*#   (\S.*)$`)
)

// readmeBlocks returns the shell blocks (```sh) of the walk-through
// sections of the Markdown file at path, in order.
func readmeBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeBlock
	var cur *readmeBlock
	section, prev := "", ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
			if m := outputRE.FindStringSubmatch(line); m != nil {
				cur.outputs = append(cur.outputs, m[1])
			}
		case strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		case line == "```sh" && walkThrough(section):
			cur = &readmeBlock{section: section, line: n}
			if m := needsRE.FindStringSubmatch(prev); m != nil {
				for _, p := range strings.Split(m[1], ",") {
					cur.needs = append(cur.needs, strings.TrimSpace(p))
				}
				cur.why = m[2]
			}
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// freshCopy copies the repository's files (tracked, and new ones not
// ignored; as they are in the working tree) at root into a new directory.
func freshCopy(t *testing.T, root string) string {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skipf("needs git to list the repository's files: %v", err)
	}
	list, err := exec.Command(git, "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("needs a git checkout to copy: %v", err)
	}
	dst := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the working tree, a submodule, a link
		}
		to := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		in, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		o, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm())
		if err == nil {
			_, err = io.Copy(o, in)
			if cerr := o.Close(); err == nil {
				err = cerr
			}
		}
		in.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// matchOutput reports whether want (a README output line, "…" standing
// for anything) is in out.
func matchOutput(out, want string) bool {
	parts := strings.Split(want, "…")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile(strings.Join(parts, ".*")).MatchString(out)
}

// TestREADME is issue 30 item 17: every shell block of the README's
// walk-throughs ("Try it", "Walk-through: …") runs as written, in order,
// from a fresh copy of the repository, with the built edr-lite on PATH
// (bash -e -o pipefail: a command that fails, fails the test; one the
// README expects to fail says so with "|| echo"), and prints what the
// README shows on its "#   " lines. A block needing a program the machine
// lacks (<!-- needs: PROGRAM (why) --> before it) is skipped, saying why.
// Each block runs in its own shell: blocks set their own variables. The
// closed-loop walk-through records its drive.pack itself (it was missing
// before: nothing told a user how to make it).
func TestREADME(t *testing.T) {
	bin := edrBinary(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, filepath.Join(root, "README.md"))
	sections := map[string]bool{}
	for _, b := range blocks {
		sections[b.section] = true
	}
	for _, want := range []string{"Try it", "Walk-through: from a dump to a regression test", "Walk-through: test a node against its recording"} {
		if !sections[want] {
			t.Fatalf("README.md has no shell block under %q (sections with blocks: %v)", want, sections)
		}
	}
	dir := freshCopy(t, root)
	tmp := t.TempDir() // the demo writes to $TMPDIR/edr-lite-demo
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "TMPDIR="+tmp)
	for i, b := range blocks {
		ok := t.Run(fmt.Sprintf("%d_README.md:%d", i+1, b.line), func(t *testing.T) {
			for _, p := range b.needs {
				if _, err := exec.LookPath(p); err != nil {
					t.Skipf("README.md:%d (%s) needs %s: %s", b.line, b.section, p, b.why)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", b.text)
			cmd.Dir, cmd.Env = dir, env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			t.Logf("README.md:%d (%s): %v", b.line, b.section, time.Since(start).Round(time.Millisecond))
			if err != nil {
				t.Fatalf("README.md:%d (%s) failed: %v\n%s\n--- output:\n%s", b.line, b.section, err, b.text, out.String())
			}
			var missing []string
			for _, w := range b.outputs {
				if !matchOutput(out.String(), w) {
					missing = append(missing, w)
				}
			}
			if len(missing) > 0 {
				t.Errorf("README.md:%d (%s) shows lines the commands did not print:\n  %s\n--- output:\n%s", b.line, b.section,
					strings.Join(missing, "\n  "), out.String())
			}
		})
		if !ok {
			break // the later blocks build on this one
		}
	}
}
