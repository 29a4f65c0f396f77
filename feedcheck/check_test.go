package feedcheck_test

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/feedcheck"
	"github.com/edr-lite/edr-lite/schema"
)

var layout = schema.MustParseLayout("f32le speed (m/s); f32le command; u8 brake")

func msg(speed, cmd float32, brake uint8) []byte {
	b := binary.LittleEndian.AppendUint32(nil, math.Float32bits(speed))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(cmd))
	return append(b, brake)
}

func lines(ms []feedcheck.Mismatch) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.String() + "\n")
	}
	return b.String()
}

// TestFieldTolerances: a field's own bounds win over the check's, for the
// field and what lies under it; other fields keep the check's.
func TestFieldTolerances(t *testing.T) {
	rec := []feedcheck.Message{{TimeNs: 1e6, Data: msg(20, 0.5, 1)}, {TimeNs: 2e6, Data: msg(21, 0.6, 1)}}
	pub := []feedcheck.Message{{TimeNs: 1e6, Data: msg(20.001, 0.52, 1)}, {TimeNs: 2e6, Data: msg(21, 0.7, 1)}}
	f := func(ch feedcheck.Check, want ...string) {
		t.Helper()
		ch.Decoder = layout
		ms, err := feedcheck.Compare(ch, "planner/brake", rec, pub)
		if err != nil {
			t.Fatal(err)
		}
		got := lines(ms)
		if strings.Count(got, "\n") != len(want) {
			t.Fatalf("%+v: got\n%s want %d", ch.Tolerances, got, len(want))
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("got\n%s want %q", got, w)
			}
		}
	}
	f(feedcheck.Check{Mode: feedcheck.Tolerance, Abs: 1e-6},
		"planner/brake step 1 (planner/brake seq 0 at +0s): value speed: expected 20, got 20.001",
		"step 1 (planner/brake seq 0 at +0s): value command: expected 0.5, got 0.52",
		"planner/brake step 2 (planner/brake seq 1 at +1ms): value command: expected 0.6, got 0.7")
	f(feedcheck.Check{Mode: feedcheck.Tolerance, Abs: 1e-6, Tolerances: []feedcheck.FieldTolerance{{Field: "command", Abs: 0.05}}},
		"value speed: expected 20, got 20.001", "step 2 (planner/brake seq 1 at +1ms): value command: expected 0.6, got 0.7")
	f(feedcheck.Check{Mode: feedcheck.Tolerance, Tolerances: []feedcheck.FieldTolerance{{Field: "command", Rel: 0.2}, {Field: "speed", Abs: 0.01}}})
	// under Exact the tolerances do not count
	f(feedcheck.Check{Mode: feedcheck.Exact, Tolerances: []feedcheck.FieldTolerance{{Field: "command", Rel: 1}, {Field: "speed", Abs: 1}}},
		"value speed", "step 1 (planner/brake seq 0 at +0s): value command", "step 2 (planner/brake seq 1 at +1ms): value command")
}

// TestOptionErrors: what cannot be checked is an *OptionError, errors.Is
// ErrOptions, its words naming the check.
func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		ch   feedcheck.Check
		want string
	}{
		{feedcheck.Check{Mode: 7}, "check mode 7"},
		{feedcheck.Check{Topic: "a", Abs: -1}, `check "a": tolerances must be 0 or more`},
		{feedcheck.Check{Topic: "a", Tolerances: []feedcheck.FieldTolerance{{Field: "x", Rel: math.NaN()}}}, `check "a": field x: tolerances must be 0 or more`},
		{feedcheck.Check{Topic: "a", Tolerances: []feedcheck.FieldTolerance{{Abs: 1}}}, `check "a": a field tolerance names no field`},
		{feedcheck.Check{Align: feedcheck.AlignNearest}, `check "": align nearest needs a window`},
		{feedcheck.Check{Topic: "[", Mode: feedcheck.None}, `check topic glob "["`},
	} {
		err := tc.ch.Validate()
		var oe *feedcheck.OptionError
		if !errors.Is(err, feedcheck.ErrOptions) || !errors.As(err, &oe) || !strings.HasPrefix(oe.Detail, tc.want) ||
			err.Error() != "feedcheck: bad check: "+oe.Detail {
			t.Errorf("%+v: %v, want %q", tc.ch, err, tc.want)
		}
	}
	if _, err := feedcheck.Compare(feedcheck.Check{Mode: feedcheck.Tolerance}, "t", nil, nil); !errors.Is(err, feedcheck.ErrOptions) ||
		!strings.Contains(err.Error(), "a tolerance check of t needs a decoder") {
		t.Errorf("no decoder: %v", err)
	}
	for _, s := range []string{"exact", "tolerance", "none"} {
		if m, err := feedcheck.ParseMode(s); err != nil || m.String() != s {
			t.Errorf("%s: %v %v", s, m, err)
		}
	}
	for _, s := range []string{"seq", "time", "nearest"} {
		if a, err := feedcheck.ParseAlign(s); err != nil || a.String() != s {
			t.Errorf("%s: %v %v", s, a, err)
		}
	}
	if _, err := feedcheck.ParseMode("exactly"); !errors.Is(err, feedcheck.ErrOptions) || !strings.Contains(err.Error(), `check "exactly": want exact, tolerance or none`) {
		t.Errorf("typo: %v", err)
	}
	if s := feedcheck.Mode(-1).String(); s != "CheckMode(-1)" {
		t.Errorf("Mode(-1) = %s", s)
	}
}

// TestMatches: a glob without a channel selects every channel.
func TestMatches(t *testing.T) {
	ch := feedcheck.Check{Topic: "planner/*"}
	for topic, want := range map[string]bool{"planner/brake": true, "planner/brake#front": true, "vehicle/speed": false} {
		if ch.Matches(topic) != want {
			t.Errorf("%s: %v", topic, !want)
		}
	}
	if all := (feedcheck.Check{}); !all.Matches("x") {
		t.Error("an empty glob selects nothing")
	}
}
