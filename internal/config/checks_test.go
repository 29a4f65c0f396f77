package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseChecks(t *testing.T) {
	c, err := ParseChecks("c.toml", []byte(`
[[check]]
topic = "planner/brake"
mode = "tolerance"
abs = 1e-6
rel = 1e-5
fields = ["command", "p"]
align = "nearest"
window = "5ms"
layout = "brake.layout"

[[check]]
mode = "none"
`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Check[0], c.Check[1]
	if a.Topic != "planner/brake" || a.Mode != "tolerance" || a.Abs != 1e-6 || a.Rel != 1e-5 || len(a.Fields) != 2 ||
		a.Align != "nearest" || a.Window.D() != 5*time.Millisecond || a.Layout != "brake.layout" {
		t.Errorf("first check %+v", a)
	}
	if b.Topic != "" || b.Mode != "none" || b.Align != "seq" {
		t.Errorf("second check %+v (defaults)", b)
	}
	j, err := ParseChecks("c.json", []byte(`{"check": [{"topic": "a/*", "mode": "exact", "window": "1ms", "protobuf": "p.desc", "message": "p.M"}]}`))
	if err != nil || j.Check[0].Window.D() != time.Millisecond || j.Check[0].Message != "p.M" {
		t.Fatalf("json: %v %+v", err, j)
	}
}

func TestParseChecksErrors(t *testing.T) {
	f := func(name, src, want string) {
		t.Helper()
		_, err := ParseChecks(name, []byte(src))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
	f("c.toml", "", "c.toml: no [[check]]")
	f("c.toml", "[[check]]\nmode = \"exact\"\ntolerance = 1\n", `c.toml:3: unknown key "check.tolerance"`)
	f("c.toml", "[[check]]\nmode = \"close\"\n", `check 1 (topic ""): mode = "close": want one of exact, tolerance, none`)
	f("c.toml", "[[check]]\nalign = \"nearest\"\n", "align nearest needs a window")
	f("c.toml", "[[check]]\nwindow = \"-1s\"\n", "negative")
	f("c.toml", "[[check]]\nwindow = 5\n", "has no unit")
	f("c.toml", "[[check]]\nlayout = \"a\"\njson = true\n", "give one of layout, protobuf and json")
	f("c.toml", "[[check]]\nprotobuf = \"a.desc\"\n", "needs the message name")
	f("c.toml", "[[check]]\nabs = -1.0\n", "0 or more")
	f("c.toml", "[[check]]\ntopic = \"[x\"\n", "topic glob")
	f("c.toml", "[[check]\n", "c.toml:2: expected end of table array name")
	f("c.json", `{"check": [{"modes": "x"}]}`, `unknown field "modes"`)
	f("c.json", `{"check": [{}]} {}`, "data after the JSON object")
	f("c.json", `{"check": [{"window": 3}]}`, "has no unit")
}
