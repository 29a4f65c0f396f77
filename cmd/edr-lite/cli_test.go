package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the CLI in-process and returns exit code, stdout, stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageAndUnknownVerb(t *testing.T) {
	if code, _, errs := runCLI(t); code != exitUsage || !strings.Contains(errs, "Verbs:") {
		t.Errorf("no args: code %d, stderr %q", code, errs)
	}
	if code, out, _ := runCLI(t, "help"); code != exitOK || !strings.Contains(out, "config") {
		t.Errorf("help: code %d, stdout %q", code, out)
	}
	if code, _, errs := runCLI(t, "frobnicate"); code != exitUsage || !strings.Contains(errs, `unknown verb "frobnicate"`) {
		t.Errorf("unknown verb: code %d, stderr %q", code, errs)
	}
}

func TestEveryVerbHasHelpWithExample(t *testing.T) {
	for name := range verbs {
		code, out, errs := runCLI(t, name, "--help")
		if code != exitOK || !strings.Contains(out, "Usage:") || !strings.Contains(out, "Example:") {
			t.Errorf("%s --help: code %d, stdout %q, stderr %q", name, code, out, errs)
		}
	}
}

func TestConfigInitAndCheck(t *testing.T) {
	code, out, _ := runCLI(t, "config", "init")
	if code != exitOK || !strings.Contains(out, "[recorder]") {
		t.Fatalf("config init: code %d", code)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	// check is run's check: the default's dump directory and socket must be
	// creatable, which /var/lib and /run are only for root
	out = strings.Replace(out, `dump_dir = "/var/lib/edr-lite/dumps"`, fmt.Sprintf("dump_dir = %q", filepath.Join(dir, "dumps")), 1)
	out = strings.Replace(out, `socket = "/run/edr-lite.sock"`, fmt.Sprintf("socket = %q", filepath.Join(dir, "edr.sock")), 1)
	os.WriteFile(good, []byte(out), 0o644)
	if code, out, errs := runCLI(t, "config", "check", good); code != exitOK || !strings.Contains(out, "ok") {
		t.Errorf("check default: code %d out %q err %q", code, out, errs)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[recorder]\npre = \"forever\"\n"), 0o644)
	if code, _, errs := runCLI(t, "config", "check", bad); code != exitFail || !strings.Contains(errs, "bad.toml:2") {
		t.Errorf("check bad: code %d err %q", code, errs)
	}
	if code, _, _ := runCLI(t, "config", "check"); code != exitUsage {
		t.Errorf("check without file: code %d, want 2", code)
	}
	if code, _, _ := runCLI(t, "config", "explode"); code != exitUsage {
		t.Errorf("unknown action: code %d, want 2", code)
	}
}

func TestHelpOnStdoutOnlyAndBadFlag(t *testing.T) {
	code, out, errs := runCLI(t, "info", "--help")
	if code != exitOK || errs != "" || !strings.Contains(out, "Usage:") {
		t.Errorf("info --help: code %d, stderr %q", code, errs)
	}
	code, out, errs = runCLI(t, "info", "--bogus", "x")
	if code != exitUsage || out != "" || !strings.Contains(errs, "-bogus") || !strings.Contains(errs, "edr-lite info --help") {
		t.Errorf("bad flag: code %d, stdout %q, stderr %q", code, out, errs)
	}
}
