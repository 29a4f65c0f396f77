//go:build !race

package scripts

import (
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// TestOnMessageAllocs: delivering a message to a rule allocates nothing per
// message. Numbers handed to Lua are boxed in blocks (one allocation per
// numBoxBlock values, the same for gopher-lua's arithmetic), so the exact
// count over many messages is also checked to stay under one per ten
// messages.
func TestOnMessageAllocs(t *testing.T) {
	for _, br := range benchRules {
		t.Run(br.name, func(t *testing.T) {
			var r *Rule
			if br.src == "" {
				r, _ = shipped(t, br.name, br.params)
			} else {
				r, _ = load(t, br.src, nil)
			}
			m := &Message{Topic: "vehicle/speed", TS: base, Data: f32(20)}
			feed := func() {
				m.TS += int64(10 * time.Millisecond)
				r.Feed(m)
			}
			for range 1000 { // warm up: registry, match cache, first blocks
				feed()
			}
			if n := testing.AllocsPerRun(10000, feed); n != 0 {
				t.Errorf("%v allocs per message, want 0", n)
			}
			const runs = 20000
			if n := testutil.Mallocs(runs, feed); n > runs/10 {
				t.Errorf("%d allocations for %d messages, want at most one per 10", n, runs)
			}
			mustNotBeDisabled(t, r)
		})
	}
}

// TestFieldByNameAllocs: reading a packed field by name (m.speed,
// m:f(path), the shipped threshold and hard_brake rules with path)
// allocates nothing per message, like reading it by offset.
func TestFieldByNameAllocs(t *testing.T) {
	for _, p := range fieldPairs {
		t.Run(p.name, func(t *testing.T) {
			r := p.load(t, true)
			m := typedSpeed()
			feed := feeder(r, m, 1)
			for range 1000 {
				feed()
			}
			if n := testing.AllocsPerRun(10000, feed); n != 0 {
				t.Errorf("%v allocs per message, want 0", n)
			}
			const runs = 20000
			if n := testutil.Mallocs(runs, feed); n > runs/10 {
				t.Errorf("%d allocations for %d messages, want at most one per 10", n, runs)
			}
			mustNotBeDisabled(t, r)
		})
	}
}
