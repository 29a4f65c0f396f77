package scripts

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTriggerBounds: what trigger{} hands on (reason, tag, params) stays
// within the bounds whatever the rule builds, cut with the Truncated
// marker; a rule name over MaxRuleName is refused at load.
func TestTriggerBounds(t *testing.T) {
	var decl strings.Builder
	for i := range 100 {
		fmt.Fprintf(&decl, "param('p%03d', 1)\n", i)
	}
	r, f := load(t, decl.String()+`param('long', string.rep('v', 5000))
param(string.rep('n', 300), 1)
rule{name='big', topics='a'}
function on_message(m) trigger{ reason = string.rep('r', 1000000), tag = string.rep('é', 400000) } end`, nil)
	for i := range 3 {
		r.Feed(&Message{Topic: "a", TS: at(0) + int64(i)})
	}
	mustNotBeDisabled(t, r)
	if len(f.list) != 3 {
		t.Fatalf("fired %d, want 3", len(f.list))
	}
	tr := f.list[0]
	if len(tr.Reason) > MaxReason || !strings.HasSuffix(tr.Reason, Truncated) || !strings.HasPrefix(tr.Reason, "rrrr") {
		t.Errorf("reason: %d bytes, ends %q", len(tr.Reason), tr.Reason[max(0, len(tr.Reason)-20):])
	}
	if len(tr.Tag) > MaxTag || !strings.HasSuffix(tr.Tag, Truncated) || !utf8.ValidString(tr.Tag) {
		t.Errorf("tag: %d bytes, valid UTF-8 %v", len(tr.Tag), utf8.ValidString(tr.Tag))
	}
	if len(tr.Params) > MaxParams {
		t.Errorf("%d params recorded, want at most %d", len(tr.Params), MaxParams)
	}
	if got := tr.Params[Truncated]; got != "39 more parameter(s) not recorded" {
		t.Errorf("params marker: %q (params %v)", got, tr.Params)
	}
	for k, v := range tr.Params {
		if len(k) > MaxParamName || len(v) > MaxParamValue {
			t.Errorf("param %d bytes = %d bytes", len(k), len(v))
		}
	}
	if r.Decl().Params["long"] == "" || len(r.Decl().Params) != 102 {
		t.Errorf("the declaration keeps every parameter whole: %d", len(r.Decl().Params))
	}

	// within the bounds, nothing changes (and the map is shared)
	r, f = load(t, "param('x', 1)\nrule{name='small', topics='a'}\nfunction on_message(m) trigger{ reason = 'r', tag = 't' } end", nil)
	r.Feed(&Message{Topic: "a", TS: at(0)})
	if tr := f.list[0]; tr.Reason != "r" || tr.Tag != "t" || tr.Params["x"] != "1" || len(tr.Params) != 1 {
		t.Errorf("small trigger changed: %+v", tr)
	}

	if _, err := LoadSource("t.lua", "rule{name=string.rep('n', 200), topics='a'}\nfunction on_message(m) end", Options{Logger: quiet}); err == nil ||
		!strings.Contains(err.Error(), "name: 200 bytes, longer than 128") {
		t.Errorf("long rule name: %v", err)
	}
}

func TestBound(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcdefghijklmnopqrstuvwxyz", 20, "abcdef" + Truncated},
		{"ééééééééééé", 21, "ééé" + Truncated}, // cut on a character boundary
	} {
		if got := Bound(c.in, c.max); got != c.want || len(got) > c.max {
			t.Errorf("Bound(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}
