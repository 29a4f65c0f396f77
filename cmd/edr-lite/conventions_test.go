package main

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestInternalPrefixesListed keeps userError's list of internal packages
// equal to the directories under internal/.
func TestInternalPrefixesListed(t *testing.T) {
	ents, err := os.ReadDir(filepath.Join("..", "..", "internal"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	want := slices.Clone(internalPackages)
	slices.Sort(want)
	if !slices.Equal(dirs, want) {
		t.Errorf("internal/ holds %v; internalPackages lists %v", dirs, want)
	}
}

func TestUserError(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := userError(in); got != want {
			t.Errorf("userError(%q) = %q, want %q", in, got, want)
		}
	}
	f("a.pack: dumpfile: not a pack, MCAP or MP4 file", "a.pack: not a pack, MCAP or MP4 file")
	f("units: duration \"x\"", "duration \"x\"")
	f("filter: bad selection: --to: units: bad", "bad selection: --to: bad")
	f("pack: bad magic", "pack: bad magic") // a public room names the format at fault
	f("mcap: export a.mcap: mcap: truncated", "mcap: export a.mcap: mcap: truncated")
	f("dumpfile.go: dumpfiles: x", "dumpfile.go: dumpfiles: x")
	f("scripts: reload decel: scripts: syntax error: d.lua line:3", "reload decel: syntax error: d.lua line:3")
	f("dump: listing /x: open /x: no such file", "listing /x: open /x: no such file")
	f("a.jsonl: jsonl: bad JSON-lines input: line 1", "a.jsonl: bad JSON-lines input: line 1")
	// what the user typed is kept, whatever it is named
	if got := userError("dump: open dump: no such file", "dump"); got != "dump: open dump: no such file" {
		t.Errorf("a file named dump lost its name: %q", got)
	}
	if got := userError("report: shm: x", "report"); got != "report: x" {
		t.Errorf("kept: %q", got)
	}
}

// TestRoomPrefixesListed keeps userError's lists equal to the packages of
// the repository: every top-level package is a room whose prefix is
// removed, but for the formats pack and mcap (and bench, fuzz and sdk,
// which make no errors for users).
func TestRoomPrefixesListed(t *testing.T) {
	ents, err := os.ReadDir(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var rooms []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join("..", "..", e.Name(), "doc.go")); err == nil && e.IsDir() {
			switch e.Name() {
			case "pack", "mcap", "bench", "fuzz", "sdk":
			default:
				rooms = append(rooms, e.Name())
			}
		}
	}
	want := slices.Clone(roomPackages)
	slices.Sort(want)
	if !slices.Equal(rooms, want) {
		t.Errorf("the repository's rooms are %v; roomPackages lists %v", rooms, want)
	}
}

// TestHelpSpellsFlagsAsUsage: every verb's help lists each flag as the
// usage lines spell it (--from, -o), never the flag package's -from, and a
// bad flag is reported the same way.
func TestHelpSpellsFlagsAsUsage(t *testing.T) {
	for name, v := range verbs {
		_, help, _ := runCLI(t, name, "--help")
		c := probeCommand(v)
		c.fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(help, "\n  "+flagSpelling(f.Name)) {
				t.Errorf("%s --help does not list %s", name, flagSpelling(f.Name))
			}
			if len(f.Name) > 1 && strings.Contains(help, "\n  -"+f.Name) {
				t.Errorf("%s --help spells -%s", name, f.Name)
			}
		})
	}
	_, _, errs := runCLI(t, "cat", "x.pack", "--bogus")
	if !strings.Contains(errs, "flag provided but not defined: --bogus") {
		t.Errorf("bad flag: %q", errs)
	}
	_, _, errs = runCLI(t, "cat", "x.pack", "--limit", "many")
	if !strings.Contains(errs, "for flag --limit") {
		t.Errorf("bad flag value: %q", errs)
	}
}

// TestGoldenVersion pins the layout of version (the test binary's build
// has no VCS stamp; TestVersionStamped checks a stamped build).
func TestGoldenVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := runCLI(t, args...)
		if code != exitOK || errs != "" {
			t.Fatalf("%v: %d %q", args, code, errs)
		}
		out = strings.ReplaceAll(out, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH, "$GO $PLATFORM")
		checkGolden(t, "version.txt", out)
	}
}

// TestVersionStamped builds the binary from a git repository holding this
// tree (one commit, a fixed date) and checks that version prints that
// commit, its time, "not modified", the Go version and what "go version
// -m" reads from the same binary.
func TestVersionStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary in a copy of the tree; skipped in -short mode")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("needs git: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-12-01T10:00:00Z", "GIT_COMMITTER_DATE=2026-12-01T10:00:00Z",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// the files of the working tree, as they are now (tracked and new)
	files := strings.Split(git(root, "ls-files", "-co", "--exclude-standard", "-z"), "\x00")
	for _, f := range files {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the working tree
		}
		p := filepath.Join(repo, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(repo, "init", "-q")
	git(repo, "add", "-A")
	git(repo, "commit", "-q", "-m", "test")
	rev := git(repo, "rev-parse", "HEAD")
	bin := filepath.Join(tmp, "edr-lite")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/edr-lite")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var got buildInfo
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Revision != rev || got.Time != "2026-12-01T10:00:00Z" || got.Modified || got.Go != runtime.Version() ||
		got.Module != "github.com/edr-lite/edr-lite" {
		t.Errorf("version --json = %+v, want revision %s", got, rev)
	}
	// the module version is what the go command stamped
	mv, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\tmod\tgithub.com/edr-lite/edr-lite\t(\S+)`).FindSubmatch(mv)
	if m == nil || string(m[1]) != got.Version {
		t.Errorf("version says %q; go version -m says %q", got.Version, mv)
	}
	text, _ := exec.Command(bin, "--version").Output()
	if !strings.Contains(string(text), "revision: "+rev) || !strings.Contains(string(text), "edr-lite "+got.Version) {
		t.Errorf("--version:\n%s", text)
	}
}

// completionBin puts the built binary on PATH as edr-lite (the scripts
// call it by the name typed) and returns the environment.
func completionEnv(t *testing.T) []string {
	t.Helper()
	return append(os.Environ(), "PATH="+filepath.Dir(edrBinary(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// complete runs a shell snippet and returns its output lines.
func shellLines(t *testing.T, env []string, shell string, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath(shell); err != nil {
		t.Skipf("needs %s: %v", shell, err)
	}
	cmd := exec.Command(shell, args...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", shell, err, out)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestCompletion loads each shell's script from the built binary into the
// real shell and completes verbs, flags, and flag values.
func TestCompletion(t *testing.T) {
	env := completionEnv(t)
	type want struct {
		line string   // what was typed
		has  []string // candidates that must be offered
		not  []string // and must not
	}
	cases := []want{
		{"edr-lite fil", []string{"filter"}, []string{"cat"}},
		{"edr-lite cat x.pack --to", []string{"--topics", "--to"}, []string{"--from", "-to"}},
		{"edr-lite export --format ", []string{"jsonl", "mcap"}, nil},
		{"edr-lite filter a.pack --compression z", []string{"zstd"}, []string{"lz4"}},
		{"edr-lite completion ", []string{"bash", "zsh", "fish"}, nil},
		{"edr-lite --ver", []string{"--version"}, nil},
	}
	check := func(t *testing.T, c want, got []string) {
		t.Helper()
		for _, h := range c.has {
			if !slices.Contains(got, h) {
				t.Errorf("%q: %v lacks %q", c.line, got, h)
			}
		}
		for _, n := range c.not {
			if slices.Contains(got, n) {
				t.Errorf("%q: %v offers %q", c.line, got, n)
			}
		}
	}
	t.Run("bash", func(t *testing.T) {
		for _, c := range cases {
			words := strings.Fields(c.line)
			if strings.HasSuffix(c.line, " ") {
				words = append(words, "")
			}
			quoted := make([]string, len(words))
			for i, w := range words {
				quoted[i] = "'" + w + "'"
			}
			script := `source <(edr-lite completion bash)
COMP_WORDS=(` + strings.Join(quoted, " ") + `); COMP_CWORD=$((${#COMP_WORDS[@]}-1))
_edr_lite edr-lite "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
complete -p edr-lite`
			got := shellLines(t, env, "bash", "-c", script)
			if !slices.ContainsFunc(got, func(l string) bool {
				return strings.HasPrefix(l, "complete ") && strings.HasSuffix(l, "-F _edr_lite edr-lite") && strings.Contains(l, "-o default")
			}) {
				t.Errorf("bash: not registered: %v", got)
			}
			check(t, c, got)
		}
	})
	t.Run("zsh", func(t *testing.T) {
		for _, c := range cases {
			words := strings.Fields(c.line)
			if strings.HasSuffix(c.line, " ") {
				words = append(words, "")
			}
			quoted := make([]string, len(words))
			for i, w := range words {
				quoted[i] = "'" + w + "'"
			}
			// _describe and _files are compsys functions that need the line
			// editor: stand-ins print what the script hands them.
			script := `autoload -U compinit && compinit -u
source <(edr-lite completion zsh)
_describe() { local -a c; c=("${(@P)2}"); print -l -- "${c[@]%%:*}" }
_files() { print -- FILES }
words=(` + strings.Join(quoted, " ") + `); CURRENT=${#words}
_edr_lite`
			check(t, c, shellLines(t, env, "zsh", "-f", "-c", script))
		}
	})
	t.Run("fish", func(t *testing.T) {
		for _, c := range cases {
			script := `edr-lite completion fish | source; complete -C '` + c.line + `'`
			var got []string
			for _, l := range shellLines(t, env, "fish", "--no-config", "-c", script) {
				w, _, _ := strings.Cut(l, "\t")
				got = append(got, w)
			}
			check(t, c, got)
		}
	})
}
