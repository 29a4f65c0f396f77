//go:build !race

package replay

import (
	"context"
	"testing"

	"edr-lite/pack"
)

// TestReplayAllocs proves the per-message path allocates nothing: Run over
// 40000 messages allocates exactly as much as over 40 (its fixed cost), as
// fast as possible and in timed mode.
func TestReplayAllocs(t *testing.T) {
	open := func(n int) *pack.Reader {
		var msgs []rec
		for i := 0; i < n; i++ {
			msgs = append(msgs, rec{name: "t" + string(rune('a'+i%4)), gen: int64(i), done: int64(i + 1), data: payload("x", i, 200)})
		}
		r, err := pack.Open(writeDump(t, "d.pack", msgs, nil))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	small, big := open(40), open(40000)
	for _, rate := range []float64{0, 1e12} {
		// allocations of Run alone: New+Run minus New
		allocs := func(r *pack.Reader) float64 {
			newOnly := testing.AllocsPerRun(5, func() {
				if _, err := New([]*pack.Reader{r}, Options{Rate: rate}); err != nil {
					t.Fatal(err)
				}
			})
			both := testing.AllocsPerRun(5, func() {
				p, err := New([]*pack.Reader{r}, Options{Rate: rate})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := p.Run(context.Background(), Discard{}); err != nil {
					t.Fatal(err)
				}
			})
			return both - newOnly
		}
		if a, b := allocs(small), allocs(big); a != b {
			t.Errorf("rate %v: Run allocates %v times for 40 messages, %v for 40000: the per-message path allocates", rate, a, b)
		}
	}
}

func TestHistAllocs(t *testing.T) {
	var h hist
	if a := testing.AllocsPerRun(100, func() { h.add(12345) }); a != 0 {
		t.Errorf("hist.add: %v allocs", a)
	}
}

func TestJSONLLineAllocs(t *testing.T) {
	buf := make([]byte, 0, 4096)
	q := []byte(`"vehicle/speed"`)
	meta, data := []byte{1, 2, 3}, payload("x", 1, 300)
	a := testing.AllocsPerRun(100, func() {
		buf = appendJSONLMessage(buf[:0], 12345, q, 1e18, 1e18-5, 0, meta, data)
	})
	if a != 0 {
		t.Errorf("appendJSONLMessage: %v allocs", a)
	}
}
