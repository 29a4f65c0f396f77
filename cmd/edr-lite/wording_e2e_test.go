package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// rePackagePrefix finds a package prefix in what the binary prints: a
// room or internal package name followed by ": " at the start or after
// ": " (pack: and mcap: name the format and stay).
var rePackagePrefix = regexp.MustCompile(`(^|: |\n)(` + strings.Join(append(append([]string(nil), internalPackages...), roomPackages...), "|") + `): `)

// TestE2EErrorsNameWhatTheUserKnows (#30.11): what the binary prints for
// failing verbs names the user's paths, keys and rules, with no package
// prefix (units:, scripts:, dump:, replay:, jsonl:) and no temporary name
// of the binary's own (.edr-lite-export-NNN/cut.pack, merged.pack.pack).
func TestE2EErrorsNameWhatTheUserKnows(t *testing.T) {
	dir := t.TempDir()
	dump := demoDump(t, dir, "pack")
	merged := filepath.Join(dir, "merged.pack")
	if code, _, errs := runBin(t, "merge", "-o", merged, dump); code != 0 {
		t.Fatalf("merge: %s", errs)
	}
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("hello\n"), 0o644)
	half := filepath.Join(dir, "half.pack")
	b, _ := os.ReadFile(dump)
	os.WriteFile(half, b[:len(b)/2], 0o644)
	badCfg := filepath.Join(dir, "bad.toml")
	os.WriteFile(badCfg, []byte("[recorder]\npost = \"2seconds\"\n[[rule]]\nbuiltin = \"hard_brak\"\n"), 0o644)

	for _, c := range []struct {
		args []string
		want string // a text the message must hold
	}{
		{[]string{"ls", filepath.Join(dir, "none")}, "listing " + filepath.Join(dir, "none")},
		{[]string{"export", "--format", "jpeg-dir", "--topics", "vehicle/*", "-o", filepath.Join(dir, "jd"), merged}, "the cut of " + merged + ": no topic of type foxglove.CompressedImage"},
		{[]string{"import", text, "-o", filepath.Join(dir, "i.pack")}, text + ": bad JSON-lines input"},
		{[]string{"import", "--format", "jsonl", text, "-o", filepath.Join(dir, "i.mcap")}, text + ": bad JSON-lines input"}, // a choice flag's value is no file name to keep
		{[]string{"rules", "test", "--rules", "builtin:hard_brak", dump}, `no shipped rule "hard_brak" (did you mean "hard_brake"?)`},
		{[]string{"config", "check", badCfg}, `bad.toml:2: recorder.post: bad duration "2seconds"`},
		{[]string{"cat", half}, half},
		{[]string{"info", text}, text},
		{[]string{"verify", text}, text},
		{[]string{"recover", text, "-o", filepath.Join(dir, "r.pack")}, text},
		{[]string{"report", "-o", filepath.Join(dir, "r.html"), text}, text},
		{[]string{"replay", "-o", "discard", text}, text},
		{[]string{"split", "--duration", "1s", "-o", filepath.Join(dir, "s"), text}, text},
		{[]string{"compress", "--compression", "lz4", "-o", filepath.Join(dir, "c.pack"), text}, text},
		{[]string{"filter", "--topics", "vehicle/*", "-o", filepath.Join(dir, "f.pack"), half}, half},
		{[]string{"export", "--format", "mcap", "-o", filepath.Join(dir, "e.mcap"), text}, text},
	} {
		code, _, errs := runBin(t, c.args...)
		if code == 0 {
			t.Errorf("edr-lite %s: exit 0, want a failure", strings.Join(c.args, " "))
			continue
		}
		if m := rePackagePrefix.FindString(errs); m != "" {
			t.Errorf("edr-lite %s prints a package prefix %q:\n%s", strings.Join(c.args, " "), strings.TrimLeft(m, ": \n"), errs)
		}
		if strings.Contains(errs, ".edr-lite-") || strings.Contains(errs, ".pack.pack") {
			t.Errorf("edr-lite %s names a temporary file of its own:\n%s", strings.Join(c.args, " "), errs)
		}
		if !strings.Contains(errs, c.want) {
			t.Errorf("edr-lite %s:\n%s\nwant it to say %q", strings.Join(c.args, " "), errs, c.want)
		}
	}
}

// TestE2EReloadErrorNamesTheRule (#30.11): a reload that fails says which
// rule, file and line, once, without package prefixes, both from the
// reload verb and in the recorder's log (SIGHUP).
func TestE2EReloadErrorNamesTheRule(t *testing.T) {
	d := startDaemon(t, `
[recorder]
dump_dir = "$DIR/dumps"
cache_size = "8MiB"
[rotation]
min_free_disk = 0
[[source.shm]]
dir = "$DIR/shm"
[[rule]]
file = "$DIR/decel.lua"
[control]
socket = "$DIR/edr.sock"
`, map[string]string{"decel.lua": "rule{name='decel', topics='sensor/a'}\nfunction on_message(m) end\n"}, nil)
	rule := filepath.Join(d.dir, "decel.lua")
	os.WriteFile(rule, []byte("rule{name='decel', topics='sensor/a'}\nfunction on_message(m) this is not lua end\n"), 0o644)
	code, _, errs := runBin(t, "reload", "--socket", d.sock)
	want := "edr-lite reload: reload decel: syntax error: " + rule + " line:2"
	if code != 1 || !strings.HasPrefix(errs, want) || strings.Count(errs, "decel:") != 1 {
		t.Errorf("reload: exit %d\n%s\nwant exit 1 starting %q, the rule named once", code, errs, want)
	}
	if m := rePackagePrefix.FindString(errs); m != "" {
		t.Errorf("reload prints a package prefix %q:\n%s", m, errs)
	}
	d.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { return strings.Contains(d.logs.String(), `msg="rule reload"`) }, "the SIGHUP reload logged")
	line := grepLines(d.logs.String(), `msg="rule reload"`)
	if !strings.Contains(line, `err="reload decel: syntax error: `+rule) || strings.Contains(line, "scripts:") {
		t.Errorf("the reload log line: %s", line)
	}
}
