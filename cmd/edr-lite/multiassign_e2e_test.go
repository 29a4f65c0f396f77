package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EMultiAssignRefused: a rule with a multiple assignment that
// gopher-lua compiles wrongly (a, b = b, a on locals: yuin/gopher-lua#440)
// is refused by config check and by run, naming the file's line and the
// way round, instead of recording with a rule that computes wrong answers.
func TestE2EMultiAssignRefused(t *testing.T) {
	dir := t.TempDir()
	rule := filepath.Join(dir, "swap.lua")
	os.WriteFile(rule, []byte("rule { name = 'swap', topics = { 'a' } }\nfunction on_message(m)\n  local lo, hi = 1, 2\n  lo, hi = hi, lo\nend\n"), 0o644)
	path := filepath.Join(dir, "edr.toml")
	os.WriteFile(path, []byte(corpusConfig(t, dir, "[[rule]]\nfile = \""+rule+"\"")), 0o600)
	for _, args := range [][]string{{"config", "check", path}, {"run", "--config", path}} {
		code, _, errs := runBin(t, args...)
		if code != 1 || !strings.Contains(errs, "swap.lua:4: lo, hi = ...") || !strings.Contains(errs, "gopher-lua#440") ||
			!strings.Contains(errs, "one assignment per statement") {
			t.Fatalf("%v: exit %d, want 1 naming swap.lua:4, the cause and the way round:\n%s", args, code, errs)
		}
	}
}
