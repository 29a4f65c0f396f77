package main

import (
	"strings"
	"testing"
)

// TestE2EDidYouMean (#30.8): an unknown verb, flag, action or choice is
// answered with the known names close to it, through the binary, with exit
// 2 (bad usage).
func TestE2EDidYouMean(t *testing.T) {
	dump := demoDump(t, t.TempDir(), "pack")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ifno", dump}, `unknown verb "ifno" (did you mean "info"?)`},
		{[]string{"cat", "--form", "1", dump}, `flag provided but not defined: --form (did you mean "--from" or "--format"?)`},
		{[]string{"cat", "--max_memory", "1GiB", dump}, `(did you mean "--max-memory"?)`},
		{[]string{"config", "chek", "x.toml"}, `unknown config action "chek" (want init or check) (did you mean "check"?)`},
		{[]string{"list", "schemaz", dump}, `list "schemaz": want topics, schemas, triggers, metadata or attachments (did you mean "schemas"?)`},
		{[]string{"trigger", "--at", "lst"}, `--at "lst": want now or last (did you mean "last"?)`},
		{[]string{"rules", "tset"}, `(did you mean "test"?)`},
		{[]string{"export", "--format", "mcp", "-o", "x", dump}, `(did you mean "mcap"?)`},
	} {
		code, _, errs := runBin(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("edr-lite %s: exit %d\n%s\nwant exit 2 saying %s", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
	// nothing close: no guess
	if _, _, errs := runBin(t, "zzzzzz"); strings.Contains(errs, "did you mean") {
		t.Errorf("a guess for a name close to nothing: %s", errs)
	}
}

func TestChoiceHint(t *testing.T) {
	for in, want := range map[string]string{
		`--mode "ful": want full, input-only or output-only`: ` (did you mean "full"?)`,
		`unknown shell "zssh" (want bash, zsh or fish)`:      ` (did you mean "zsh"?)`,
		`--pre "2x": want a duration like 2s`:                "",
		`--schema "a": want TOPIC=LAYOUTFILE`:                "",
		`no quotes: want a or b`:                             "",
	} {
		if got := choiceHint(in); got != want {
			t.Errorf("choiceHint(%q) = %q, want %q", in, got, want)
		}
	}
}
