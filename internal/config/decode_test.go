package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// problems parses src and returns its problems as "LINE KEY: MSG".
func problems(t *testing.T, src string) []string {
	t.Helper()
	_, err := Parse("c.toml", []byte(src))
	var ps Errors
	if !errors.As(err, &ps) {
		t.Fatalf("Parse: %v, want Errors", err)
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%d %s: %s", p.Line, p.Key, p.Msg)
	}
	return out
}

// TestEveryProblemInOneRun (#30.8): values that do not parse do not stop
// the parse: six mistakes, six problems, each at its line and key.
func TestEveryProblemInOneRun(t *testing.T) {
	got := problems(t, `[recorder]
dump_dir = "/tmp/d"
post = "2seconds"
cache_sise = "64MiB"
topic_bytes = "12XB"
format = "mcapp"
max_files = 3

[rotation]
max_files = "three"
`)
	want := []string{
		`3 recorder.post: bad duration "2seconds" (want e.g. 500ms, 15s, 2m)`,
		`4 recorder.cache_sise: unknown key (did you mean "cache_size"?)`,
		`5 recorder.topic_bytes: bad size "12XB" (want e.g. 512KiB, 256MiB, 1GB)`,
		`6 recorder.format: "mcapp": want one of pack, mcap (did you mean "mcap"?)`,
		`7 recorder.max_files: unknown key (max_files is a key of [rotation])`,
		`10 rotation.max_files: want an integer, got the string "three"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestUnknownKeysAtTheirTable (#30.8b): an unknown key in each of several
// [[rule]] tables is reported at its own line, under its own index.
func TestUnknownKeysAtTheirTable(t *testing.T) {
	var src strings.Builder
	src.WriteString("[recorder]\ndump_dir = \"/tmp/d\"\n")
	for i := range 5 {
		fmt.Fprintf(&src, "\n[[rule]]\nbuiltin = \"threshold\"\nname = \"t%d\"\ndirection = \"above\"\n", i)
	}
	got := problems(t, src.String())
	if len(got) != 5 {
		t.Fatalf("%d problems, want 5:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i, p := range got {
		want := fmt.Sprintf("%d rule[%d].direction: unknown key ([[rule]] takes: builtin, file, instructions, name, params, time)", 7+5*i, i)
		if p != want {
			t.Errorf("problem %d: %s\nwant %s", i, p, want)
		}
	}
}

// TestRuleParamsTakeNumbersAndBooleans (#30.8b): params written as TOML
// numbers and booleans reach the rule as their text; a rule's name is a
// key of [[rule]].
func TestRuleParamsTakeNumbersAndBooleans(t *testing.T) {
	f, err := Parse("c.toml", []byte(`[recorder]
dump_dir = "/tmp/d"
[[rule]]
builtin = "threshold"
name = "speed_limit"
params = { topic = "vehicle/speed", offset = 0, high = 300.0, low = 2.5e1, enabled = true, big = 1e21 }
`))
	if err != nil {
		t.Fatal(err)
	}
	r := f.Rules[0]
	want := Params{"topic": "vehicle/speed", "offset": "0", "high": "300", "low": "25", "enabled": "true", "big": "1e+21"}
	if !reflect.DeepEqual(r.Params, want) || r.InstanceName != "speed_limit" {
		t.Errorf("rule %+v, want params %v and name speed_limit", r, want)
	}
	got := problems(t, "[[rule]]\nbuiltin = \"threshold\"\nparams = { topic = [\"a\"], when = 2026-01-01T00:00:00Z }\n")
	want2 := []string{
		`3 rule[0].params.topic: want a string, a number or a boolean, got an array`,
		`3 rule[0].params.when: want a string, a number or a boolean, got a date-time`,
	}
	if !reflect.DeepEqual(got, want2) {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want2, "\n"))
	}
}

// TestValueProblemsPointAtTheFix: a value of the wrong type says what the
// key wants and, where it is plain, how to write it.
func TestValueProblemsPointAtTheFix(t *testing.T) {
	got := problems(t, `[recorder]
dump_dir = 5
mlock = "true"
include = "camera/*"
pre = 15
max_topics = "64"
[control]
socket = true
[topic]
match = "a"
`)
	want := []string{
		`2 recorder.dump_dir: want a string, got the integer 5 (write it in quotes: dump_dir = "5")`,
		`3 recorder.mlock: want true or false, got the string "true" (write it without quotes: mlock = true)`,
		`4 recorder.include: want an array, got the string "camera/*" (write a list: include = ["camera/*"])`,
		`5 recorder.pre: duration 15 has no unit (write e.g. "15s")`,
		`6 recorder.max_topics: want an integer, got the string "64" (write it without quotes: max_topics = 64)`,
		`8 control.socket: want a string, got the boolean true (write it in quotes: socket = "true")`,
		`9 topic: want an array, got a table (each one is a [[topic]] table)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSyntaxErrorsDoNotStopTheParse: a syntax error on a "key = value"
// line is reported with its key and the line left out; the problems after
// it are still found. One in a table header stops the parse.
func TestSyntaxErrorsDoNotStopTheParse(t *testing.T) {
	got := problems(t, `[recorder]
dump_dir = "/tmp/d"
post = 2seconds
pre = "3s"
pre = "4s"
cache_size = "lots"
`)
	want := []string{
		`3 recorder.post: expected a top-level item to end with a newline, comment, or EOF, but got 's' instead (write strings in quotes: post = "2seconds")`,
		`5 recorder.pre: Key 'recorder.pre' has already been defined.`,
		`6 recorder.cache_size: bad size "lots" (want e.g. 512KiB, 256MiB, 1GB)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = problems(t, "[recorder\ndump_dir = \"/tmp/d\"\n")
	if len(got) != 1 || !strings.HasPrefix(got[0], "1 recorder: ") {
		t.Errorf("a broken header: %q", got)
	}
}

// TestProblemsBounded: a file of a megabyte of unknown keys is reported
// as MaxProblems problems and a count of the rest; more [[rule]] tables
// than MaxRules are refused and left out.
func TestProblemsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("[recorder]\n")
	for i := 0; b.Len() < MaxFileBytes/4; i++ {
		fmt.Fprintf(&b, "cache_sizx%d = %d\n", i, i)
	}
	_, err := Parse("w.toml", []byte(b.String()))
	var ps Errors
	if !errors.As(err, &ps) || len(ps) != MaxProblems+1 || !strings.Contains(ps[MaxProblems].Msg, "more problems, not shown") {
		t.Fatalf("%d problems, want %d and a count", len(ps), MaxProblems+1)
	}
	b.Reset()
	for range MaxRules + 1 {
		b.WriteString("[[rule]]\nbuiltin = \"manual\"\n")
	}
	f, ps := parse("r.toml", []byte(b.String()))
	if len(ps) != 1 || ps[0].Key != fmt.Sprintf("rule[%d]", MaxRules) || len(f.Rules) != MaxRules {
		t.Errorf("problems %v, %d rules kept", ps, len(f.Rules))
	}
}
