package scripts

import (
	"encoding/binary"
	"log/slog"
	"math"
	"testing"
	"time"
)

// quiet is a logger that drops everything.
var quiet = slog.New(slog.DiscardHandler)

// fired collects triggers.
type fired struct{ list []Trigger }

func (f *fired) on(t Trigger) { f.list = append(f.list, t) }

// times returns the trigger times relative to base, in milliseconds.
func (f *fired) times(base int64) []int64 {
	out := []int64{}
	for _, t := range f.list {
		out = append(out, (t.TimeNs-base)/1e6)
	}
	return out
}

// roundedTimes is times rounded to the nearest ms (for anchors that went
// through Lua's float64 numbers).
func (f *fired) roundedTimes(base int64) []int64 {
	out := []int64{}
	for _, t := range f.list {
		out = append(out, (t.TimeNs-base+5e5)/1e6)
	}
	return out
}

// load loads src as "t.lua" with params, collecting triggers.
func load(t testing.TB, src string, params map[string]string) (*Rule, *fired) {
	t.Helper()
	f := &fired{}
	r, err := LoadSource("t.lua", src, Options{Params: params, OnTrigger: f.on, Logger: quiet})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(r.Close)
	return r, f
}

// shipped loads a shipped rule with params, collecting triggers.
func shipped(t testing.TB, name string, params map[string]string) (*Rule, *fired) {
	t.Helper()
	f := &fired{}
	r, err := LoadShipped(name, Options{Params: params, OnTrigger: f.on, Logger: quiet})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	t.Cleanup(r.Close)
	return r, f
}

// base is an arbitrary, realistic message time: 2026-12-02T00:00:00Z.
const base = int64(1796169600) * int64(time.Second)

func at(d time.Duration) int64 { return base + int64(d) }

func f32(v float64) []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	return b
}

func mustNotBeDisabled(t *testing.T, r *Rule) {
	t.Helper()
	if st := r.Status(); st.Disabled {
		t.Fatalf("rule disabled: %s", st.Why)
	}
}
