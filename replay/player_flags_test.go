package replay

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"
)

// The options rosbag2 users know: --exclude, --remap, --loop with a count,
// --delay, --start-paused, --clock.

func TestPlayerExclude(t *testing.T) {
	paths, all := twoDumps(t)
	f := func(opts Options, keep func(g got) bool) {
		t.Helper()
		p, err := Open(paths, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var out []got
		if _, err := p.Run(context.Background(), collect(&out)); err != nil {
			t.Fatal(err)
		}
		var want []got
		seq := map[string]uint64{}
		for _, g := range all {
			if keep(g) {
				g.seq = seq[g.topic]
				seq[g.topic]++
				want = append(want, g)
			}
		}
		sameMsgs(t, out, want)
	}
	f(Options{Exclude: []string{"b"}}, func(g got) bool { return g.topic != "b" })
	f(Options{Exclude: []string{"a#ch1"}}, func(g got) bool { return g.topic != "a#ch1" })
	// by name: both channels of a
	f(Options{Exclude: []string{"a"}}, func(g got) bool { return g.topic == "b" })
	// exclude wins over topics
	f(Options{Topics: []string{"a"}, Exclude: []string{"a#ch*"}}, func(g got) bool { return g.topic == "a" })
	if _, err := Open(paths, Options{Exclude: []string{"[x"}}); !errors.Is(err, ErrOptions) {
		t.Errorf("bad exclude glob: %v", err)
	}
}

func TestPlayerRemap(t *testing.T) {
	paths, all := twoDumps(t)
	p, err := Open(paths, Options{Remap: map[string]string{"b": "sim/b", "a#ch1": "z"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var names []string
	for _, tp := range p.Topics() {
		names = append(names, tp.String()+"<"+tp.recordedString())
	}
	if got := strings.Join(names, " "); got != "a<a sim/b<b z#ch1<a#ch1" {
		t.Errorf("topics %s", got)
	}
	var out []got
	if _, err := p.Run(context.Background(), collect(&out)); err != nil {
		t.Fatal(err)
	}
	rename := map[string]string{"a": "a", "b": "sim/b", "a#ch1": "z#ch1"}
	for i := range all {
		all[i].topic = rename[all[i].topic]
	}
	sameMsgs(t, out, all)

	bad := func(remap map[string]string, opts Options, want string) {
		t.Helper()
		opts.Remap = remap
		_, err := Open(paths, opts)
		if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), want) {
			t.Errorf("remap %v: %v, want %q", remap, err, want)
		}
	}
	bad(map[string]string{"nope": "x"}, Options{}, "remap nope: the dumps hold no such topic (they hold a, a#ch1, b)")
	bad(map[string]string{"b": "a"}, Options{}, "remap: ")
	bad(map[string]string{"b": ""}, Options{}, "want OLD=NEW")
	// a topic filtered out may still be named (it exists), and is not renamed
	if p, err := Open(paths, Options{Topics: []string{"a"}, Remap: map[string]string{"b": "a"}}); err != nil {
		t.Errorf("remap of a topic not replayed: %v", err)
	} else {
		p.Close()
	}
}

func TestPlayerPasses(t *testing.T) {
	paths, all := twoDumps(t)
	p, err := Open(paths, Options{Loop: true, Passes: 3, Topics: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var out []got
	st, err := p.Run(context.Background(), collect(&out))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range all {
		if g.topic == "b" {
			n++
		}
	}
	if st.Passes != 3 || len(out) != 3*n || out[n].seq != 0 {
		t.Errorf("passes %d, %d messages; want 3 and %d, seq restarting each pass", st.Passes, len(out), 3*n)
	}
	if _, err := Open(paths, Options{Passes: -1}); !errors.Is(err, ErrOptions) {
		t.Errorf("negative passes: %v", err)
	}
}

// TestPlayerDelay: every pass starts Delay after the previous one ended
// (virtual clock: exact), and the delay is not a timing error.
func TestPlayerDelay(t *testing.T) {
	paths, all := twoDumps(t)
	p, err := Open(paths, Options{Rate: 1, Loop: true, Passes: 2, Delay: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	v := virtualPlayer(p)
	t0 := v.Now()
	var at []int64
	st, err := p.Run(context.Background(), OutputFunc(func(m *Message) error {
		at = append(at, v.Now()-t0)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	span := all[len(all)-1].ts - all[0].ts
	n := len(all)
	if at[0] != int64(3*time.Second) || at[n-1] != at[0]+span || at[n] != at[n-1]+int64(3*time.Second) {
		t.Errorf("first pass at %d..%d, second at %d; want 3s, 3s+%d, then 3s later", at[0], at[n-1], at[n], span)
	}
	if st.TimingMax != 0 {
		t.Errorf("timing max %v: the delay counted as lateness", st.TimingMax)
	}
	if _, err := Open(paths, Options{Delay: -1}); !errors.Is(err, ErrOptions) {
		t.Errorf("negative delay: %v", err)
	}
}

// TestPlayerStartPaused: nothing is written until Step or Resume.
func TestPlayerStartPaused(t *testing.T) {
	paths, all := twoDumps(t)
	p, err := Open(paths, Options{StartPaused: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ch := make(chan uint64, len(all))
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(context.Background(), OutputFunc(func(m *Message) error {
			ch <- m.Seq
			return nil
		}))
		done <- err
	}()
	select {
	case <-ch:
		t.Fatal("a message was written before Step or Resume")
	case <-time.After(50 * time.Millisecond):
	}
	p.Step()
	<-ch
	select {
	case <-ch:
		t.Fatal("Step let more than one message through")
	case <-time.After(20 * time.Millisecond):
	}
	p.Resume()
	for i := 1; i < len(all); i++ {
		<-ch
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestPlayerClock: one tick every 1/ClockHz of message time from the start
// of the pass, before the first message at or after it, carrying its time;
// in timed mode it is due like a message.
func TestPlayerClock(t *testing.T) {
	paths, all := twoDumps(t)
	// twoDumps spans 1000..5000 ns; a tick every 100 ns (1e7 Hz is over
	// the limit, so scale: ClockHz 1e6 = every 1000 ns)
	p, err := Open(paths, Options{ClockHz: 1e6, Rate: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	v := virtualPlayer(p)
	tps := p.Topics()
	if last := tps[len(tps)-1]; last.Name != DefaultClockTopic || last.Type.Schema.Name != ClockType || last.Index != len(tps)-1 {
		t.Fatalf("clock topic %+v", last)
	}
	type w struct {
		topic   string
		ts, at  int64
		payload int64
	}
	var out []w
	var nTicks uint64
	st, err := p.Run(context.Background(), OutputFunc(func(m *Message) error {
		x := w{topic: m.Topic.String(), ts: m.TimeNs, at: v.Now()}
		if m.Topic.Name == DefaultClockTopic {
			x.payload = int64(binary.LittleEndian.Uint64(m.Data))
			if m.GenNs != m.TimeNs || m.Seq != nTicks {
				t.Errorf("tick %d: gen %d seq %d, want seq %d", m.TimeNs, m.GenNs, m.Seq, nTicks)
			}
			nTicks++
		}
		out = append(out, x)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	var ticks []int64
	for i, x := range out {
		if x.topic != DefaultClockTopic {
			continue
		}
		ticks = append(ticks, x.payload)
		if x.payload != x.ts {
			t.Errorf("tick payload %d, time %d", x.payload, x.ts)
		}
		if i+1 < len(out) && out[i+1].topic != DefaultClockTopic && out[i+1].ts < x.ts {
			t.Errorf("tick %d before a message at %d", x.ts, out[i+1].ts)
		}
		if i > 0 && out[i-1].ts >= x.ts {
			t.Errorf("tick %d after a message at %d", x.ts, out[i-1].ts)
		}
		if x.at-out[0].at != x.ts-out[0].ts {
			t.Errorf("tick %d written at +%d, want +%d", x.ts, x.at-out[0].at, x.ts-out[0].ts)
		}
	}
	want := []int64{1000, 2000, 3000, 4000, 5000}
	if len(ticks) != len(want) || st.ClockTicks != 5 || st.Messages != uint64(len(all)) {
		t.Fatalf("ticks %v (stats %d, %d messages), want %v and %d messages", ticks, st.ClockTicks, st.Messages, want, len(all))
	}
	for i := range want {
		if ticks[i] != want[i] {
			t.Errorf("ticks %v, want %v", ticks, want)
		}
	}
	if _, err := Open(paths, Options{ClockHz: 100, ClockTopic: "a"}); !errors.Is(err, ErrOptions) {
		t.Errorf("clock topic named like a recorded one: %v", err)
	}
	if _, err := Open(paths, Options{ClockHz: -1}); !errors.Is(err, ErrOptions) {
		t.Errorf("negative clock rate: %v", err)
	}
}
