package filter

import (
	"errors"
	"strings"
	"testing"
)

func TestTopicsMatch(t *testing.T) {
	f := func(include, exclude, topic string, want bool) {
		t.Helper()
		tp, err := ParseTopics(include, exclude)
		if err != nil {
			t.Fatal(err)
		}
		if got := tp.Match(topic); got != want {
			t.Errorf("--topics %q --exclude %q: Match(%q) = %v, want %v", include, exclude, topic, got, want)
		}
	}
	f("", "", "anything", true)
	f("vehicle/*", "", "vehicle/speed", true)
	f("vehicle/*", "", "camera/front", false)
	f("vehicle/*", "", "vehicle/speed#left", true) // the name alone matches
	f("vehicle/speed#left", "", "vehicle/speed#right", false)
	f("vehicle/speed#left", "", "vehicle/speed#left", true)
	f("", "camera/*", "camera/front", false)
	f("", "camera/*", "vehicle/speed", true)
	f("vehicle/*,camera/*", "vehicle/imu", "vehicle/imu", false)
	f("vehicle/*,camera/*", "vehicle/imu", "camera/front", true)
	f(" vehicle/speed , ", "", "vehicle/speed", true)
	f("vehicle/speed", "", "vehicle/speed#", true) // pack's spelling of "no channel"
	if _, err := ParseTopics("[", ""); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--topics") {
		t.Errorf("bad glob: %v", err)
	}
	if _, err := ParseTopics("", "a[b"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--exclude") {
		t.Errorf("bad exclude glob: %v", err)
	}
	tp, _ := ParseTopics("a", "")
	if !tp.MatchName("a", "") || !tp.MatchName("a", "x") || tp.MatchName("b", "a") {
		t.Error("MatchName")
	}
}

const t0 = int64(1_764_670_000_000_000_000)

func TestParseTime(t *testing.T) {
	f := func(s string, start, want int64, offset bool) {
		t.Helper()
		tm, err := ParseTime(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if got := tm.At(start); got != want || tm.Offset() != offset || !tm.Set() || tm.String() != s {
			t.Errorf("%q at %d = %d (offset %v), want %d (offset %v)", s, start, got, tm.Offset(), want, offset)
		}
	}
	f("1764670000000000000", 5, t0, false)
	f("2025-12-02T10:06:40Z", 5, t0, false)
	f("2025-12-02T10:06:40.5Z", 5, t0+5e8, false)
	f("2025-12-02T12:06:40.5+02:00", 5, t0+5e8, false)
	f("2.5s", t0, t0+25e8, true)
	f("0", t0, 0, false) // a bare integer is nanoseconds since the epoch
	f("1m", 0, 60e9, true)
	for _, bad := range []string{"yesterday", "-2s", "2026-13-01T00:00:00Z", "1.5"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if tm, err := ParseTime(""); err != nil || tm.Set() {
		t.Errorf("empty: %v %v", tm, err)
	}
}

func TestWindowAndOrder(t *testing.T) {
	s, err := Parse("", "", "1s", "2s")
	if err != nil {
		t.Fatal(err)
	}
	if !s.NeedsStart() {
		t.Error("offsets need the start")
	}
	from, to, err := s.Window(t0)
	if err != nil || from != t0+1e9 || to != t0+2e9 {
		t.Errorf("window = %d..%d, %v", from, to, err)
	}
	all, _ := Parse("", "", "", "")
	if from, to, _ := all.Window(t0); from != MinNs || to != MaxNs || !all.All() || all.NeedsStart() {
		t.Errorf("unbounded window = %d..%d", from, to)
	}
	// --from after --to, both offsets or both absolute: at Parse
	for _, c := range [][2]string{{"3s", "2s"}, {"1764670000000000001", "1764670000000000000"}} {
		if _, err := Parse("", "", c[0], c[1]); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "is after --to") {
			t.Errorf("%v: %v", c, err)
		}
	}
	// mixed: once the start is known
	s, err = Parse("", "", "5s", "1764670000000000000")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Window(t0); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "5s after the start") {
		t.Errorf("mixed order: %v", err)
	}
	if _, err := Parse("", "", "soon", ""); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--from") {
		t.Errorf("bad --from: %v", err)
	}
	if _, err := Parse("", "", "", "later"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--to") {
		t.Errorf("bad --to: %v", err)
	}
}

func TestCheckAndEmpty(t *testing.T) {
	h := Held{What: "a.pack", Topics: []string{"vehicle/speed", "camera/front"}, StartNs: t0, EndNs: t0 + 1e9, Messages: 110}
	s, _ := Parse("lidar/*", "", "", "")
	err := s.Check(h, MinNs, MaxNs)
	if !errors.Is(err, ErrNothing) || err.Error() != "filter: the selection matches nothing: --topics 'lidar/*' matches no topic; a.pack holds camera/front, vehicle/speed" {
		t.Errorf("no topic: %v", err)
	}
	s, _ = Parse("", "vehicle/*,camera/*", "", "")
	if err := s.Check(h, MinNs, MaxNs); !errors.Is(err, ErrNothing) {
		t.Errorf("all excluded: %v", err)
	}
	s, _ = Parse("", "", "2s", "")
	from, to, _ := s.Window(t0)
	err = s.Check(h, from, to)
	if !errors.Is(err, ErrNothing) || !strings.Contains(err.Error(), "--from 2025-12-02T10:06:42.000000000Z selects nothing; a.pack holds messages from 2025-12-02T10:06:40.000000000Z to 2025-12-02T10:06:41.000000000Z") {
		t.Errorf("window after the end: %v", err)
	}
	s, _ = Parse("camera/*", "", "500ms", "550ms")
	from, to, _ = s.Window(t0)
	if err := s.Check(h, from, to); err != nil {
		t.Errorf("overlapping window: %v", err)
	}
	err = s.Empty(h, from, to)
	if !errors.Is(err, ErrNothing) || !strings.Contains(err.Error(), "no message of camera/front lies within --from 2025-12-02T10:06:40.500000000Z --to 2025-12-02T10:06:40.550000000Z") {
		t.Errorf("empty: %v", err)
	}
	many := Held{Topics: make([]string, 20)}
	for i := range many.Topics {
		many.Topics[i] = string(rune('a' + i))
	}
	s, _ = Parse("zz", "", "", "")
	if err := s.Check(many, MinNs, MaxNs); !strings.Contains(err.Error(), "the input holds a, b, c") || !strings.Contains(err.Error(), "and 8 more") {
		t.Errorf("long list: %v", err)
	}
}

func TestMatchAllocs(t *testing.T) {
	tp, _ := ParseTopics("vehicle/*,camera/*", "vehicle/imu")
	if n := testing.AllocsPerRun(100, func() { tp.Match("vehicle/speed#left") }); n != 0 {
		t.Errorf("Match allocates %v times", n)
	}
}

// TestUnmatched: the globs of --topics and --exclude that match no topic
// held (by name#channel or by name) are named; none when the topics are
// not known before reading.
func TestUnmatched(t *testing.T) {
	s, err := Parse("vehicle/speed,vehicle/sped,camera/*,veh*", "camera/fron,lidar#top", "", "")
	if err != nil {
		t.Fatal(err)
	}
	h := Held{Topics: []string{"vehicle/speed", "camera/front", "lidar#top"}}
	got := strings.Join(s.Unmatched(h), "\n")
	const held = " matches no topic; the input holds camera/front, lidar#top, vehicle/speed"
	if want := "--topics vehicle/sped" + held + "\n--topics veh*" + held + "\n--exclude camera/fron" + held; got != want { // * stops at /
		t.Errorf("Unmatched: %q, want %q", got, want)
	}
	if u := s.Unmatched(Held{TopicsIncomplete: true}); u != nil {
		t.Errorf("topics not known: %q", u)
	}
}
