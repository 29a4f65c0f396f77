package report

import (
	"math"
	"testing"
	"unicode/utf8"
)

// TestSeriesDownsampleKeepsSpikes: a million samples of a sine with one
// one-sample spike up and one down reduce to at most 4 points per column,
// the spikes among them at their times, and the exact min and max.
func TestSeriesDownsampleKeepsSpikes(t *testing.T) {
	const n, cols = 1_000_000, 500
	start, end := int64(1e18), int64(1e18)+int64(n)*1e6
	s := newSeries("t", "v", "V", start, end, cols)
	upAt, downAt := int64(1e18)+123457*1e6, int64(1e18)+876543*1e6
	for i := 0; i < n; i++ {
		ts := start + int64(i)*1e6
		v := math.Sin(float64(i) / 5000)
		switch ts {
		case upAt:
			v = 50
		case downAt:
			v = -70
		}
		s.add(ts, v)
	}
	s.add(start+5, math.NaN())
	sig := s.signal(0)
	if !sig.Downsampled || len(sig.Points) > 4*cols || len(sig.Points) < cols {
		t.Fatalf("downsampled %v, %d points for %d columns", sig.Downsampled, len(sig.Points), cols)
	}
	if sig.Count != n || sig.NonFinite != 1 || sig.Max != 50 || sig.Min != -70 {
		t.Errorf("count %d non-finite %d min %g max %g", sig.Count, sig.NonFinite, sig.Min, sig.Max)
	}
	found := map[int64]float64{}
	for i, p := range sig.Points {
		if i > 0 && p.TimeNs < sig.Points[i-1].TimeNs {
			t.Fatalf("point %d goes back in time", i)
		}
		if p.Value == 50 || p.Value == -70 {
			found[p.TimeNs] = p.Value
		}
	}
	if found[upAt] != 50 || found[downAt] != -70 || len(found) != 2 {
		t.Errorf("spikes in the plot: %v", found)
	}
}

// TestSeriesRawUntilFull: up to 2*cols samples are plotted as they are.
func TestSeriesRawUntilFull(t *testing.T) {
	s := newSeries("t", "v", "", 0, 1000, 10)
	for i := 0; i < 20; i++ {
		s.add(int64(i*50), float64(i))
	}
	sig := s.signal(0)
	if sig.Downsampled || len(sig.Points) != 20 || sig.Points[7] != (Point{350, 7}) || sig.Mean != 9.5 {
		t.Fatalf("%+v", sig)
	}
	s.add(999, 100)
	if sig = s.signal(0); !sig.Downsampled || sig.Points[len(sig.Points)-1] != (Point{999, 100}) {
		t.Fatalf("after the 21st sample: %+v", sig)
	}
}

func TestClip(t *testing.T) {
	// "ä" is 2 bytes: 12 bytes cut to the last 10, on a rune boundary
	for _, tc := range []struct{ in, want string }{{"abc", "abc"}, {"vehicle/imu_front_left", "…front_left"}, {"ääääää", "…äääää"}, {"xääääää", "…äääää"}} {
		if got := clip(tc.in, 11); got != tc.want {
			t.Errorf("clip(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := clip(tc.in, 11); !utf8.ValidString(got) {
			t.Errorf("clip(%q) = %q: not UTF-8", tc.in, got)
		}
	}
}

// TestBinsExact: the timeline bin of a message is (time - start) / bin
// width, exactly, at the edges of bins too.
func TestBinsExact(t *testing.T) {
	a, err := NewAnalyzer(Options{Bins: 7}, 1e18, 1e18+600e9+3, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := a.Topic(TopicSpec{Name: "x"})
	ts := a.topics[id]
	want := make([]uint32, len(ts.bins))
	for k := int64(0); k < int64(len(ts.bins)); k++ {
		for _, off := range []int64{k * ts.binNs, k*ts.binNs - 1, k*ts.binNs + 1, (k+1)*ts.binNs - 1} {
			if off < 0 || off > 600e9+3 {
				continue
			}
			a.Message(id, 1e18+off, 0, nil)
			want[off/ts.binNs]++
		}
	}
	for i := range want {
		if ts.bins[i] != want[i] {
			t.Fatalf("bins %v, want %v", ts.bins, want)
		}
	}
}
