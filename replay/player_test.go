package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// twoDumps writes two dumps whose messages interleave in time, with equal
// times across the files, a channel, a message without data and meta bytes.
func twoDumps(t *testing.T) (paths []string, all []got) {
	var a, b []rec
	for i := 0; i < 50; i++ {
		a = append(a, rec{name: "a", gen: int64(i*20 + 1), done: int64(1000 + i*20), data: payload("a", i, 300)})
		if i%5 == 0 {
			// same time as a's message: a's file comes first
			b = append(b, rec{name: "a", ch: "ch1", gen: 0, done: int64(1000 + i*20), data: payload("a#ch1", i, 300)})
		}
		b = append(b, rec{name: "b", gen: int64(i*20 + 2), done: int64(1010 + i*20), meta: []byte{byte(i)}, data: payload("b", i, 300)})
	}
	b = append(b, rec{name: "b", done: 5000}) // no data
	paths = []string{writeDump(t, "a.pack", a, nil), writeDump(t, "b.pack", b, nil)}
	type keyed struct {
		r        rec
		src, idx int
	}
	var ks []keyed
	for i, r := range a {
		ks = append(ks, keyed{r, 0, i})
	}
	for i, r := range b {
		ks = append(ks, keyed{r, 1, i})
	}
	sort.SliceStable(ks, func(i, j int) bool {
		if ks[i].r.done != ks[j].r.done {
			return ks[i].r.done < ks[j].r.done
		}
		return ks[i].src < ks[j].src
	})
	seq := map[string]uint64{}
	for _, k := range ks {
		topic := k.r.name
		if k.r.ch != "" {
			topic += "#" + k.r.ch
		}
		all = append(all, got{topic: topic, seq: seq[topic], ts: k.r.done, gen: k.r.gen, done: k.r.done, meta: k.r.meta,
			data: k.r.data, hasData: k.r.data != nil})
		seq[topic]++
	}
	return paths, all
}

func sameMsgs(t *testing.T, got, want []got) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.topic != w.topic || g.seq != w.seq || g.ts != w.ts || g.gen != w.gen || g.done != w.done ||
			!bytes.Equal(g.meta, w.meta) || !bytes.Equal(g.data, w.data) || g.hasData != w.hasData {
			t.Fatalf("message %d:\n got %s seq %d ts %d gen %d done %d meta %x data %d bytes (has %v)\nwant %s seq %d ts %d gen %d done %d meta %x data %d bytes (has %v)",
				i, g.topic, g.seq, g.ts, g.gen, g.done, g.meta, len(g.data), g.hasData,
				w.topic, w.seq, w.ts, w.gen, w.done, w.meta, len(w.data), w.hasData)
		}
	}
}

func TestPlayerMergesAndSelects(t *testing.T) {
	paths, all := twoDumps(t)
	f := func(opts Options, keep func(g got) bool) {
		t.Helper()
		var want []got
		seq := map[string]uint64{}
		for _, g := range all {
			if keep(g) {
				g.seq = seq[g.topic]
				seq[g.topic]++
				want = append(want, g)
			}
		}
		p, err := Open(paths, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var out []got
		st, err := p.Run(context.Background(), collect(&out))
		if err != nil {
			t.Fatal(err)
		}
		sameMsgs(t, out, want)
		if st.Messages != uint64(len(want)) || st.Passes != 1 || st.Samples != 0 {
			t.Errorf("stats %+v, want %d messages, 1 pass, no timing samples", st, len(want))
		}
	}
	f(Options{}, func(got) bool { return true })
	f(Options{Topics: []string{"a"}}, func(g got) bool { return g.topic == "a" || g.topic == "a#ch1" })
	f(Options{Topics: []string{"a#ch1", "b"}}, func(g got) bool { return g.topic == "a#ch1" || g.topic == "b" })
	f(Options{Topics: []string{"nope*"}}, func(got) bool { return false })
	f(Options{Start: 95, Duration: 200}, func(g got) bool { return g.ts >= 1095 && g.ts <= 1295 })
	f(Options{Start: 95, UntilNs: 1200}, func(g got) bool { return g.ts >= 1095 && g.ts <= 1200 })
	f(Options{Start: 95, Duration: 200, UntilNs: 1200}, func(g got) bool { return g.ts >= 1095 && g.ts <= 1200 })
	f(Options{Start: time.Hour}, func(got) bool { return false })
}

func TestPlayerTopics(t *testing.T) {
	paths, _ := twoDumps(t)
	p, err := Open(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var names []string
	for i, tp := range p.Topics() {
		if tp.Index != i {
			t.Errorf("topic %s has index %d at %d", tp.String(), tp.Index, i)
		}
		names = append(names, fmt.Sprintf("%s:%d", tp.String(), tp.Messages))
	}
	if want := "[a:50 a#ch1:10 b:51]"; fmt.Sprint(names) != want {
		t.Errorf("topics %v, want %s", names, want)
	}
}

// virtualPlayer makes p run on a virtual clock whose sleeps advance it.
func virtualPlayer(p *Player) *clock.Virtual {
	v := clock.NewVirtual(1e18)
	p.clk = v
	p.spin = 0
	p.sleep = func(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
		v.Advance(d)
		return ctx.Err()
	}
	p.nap = func(d time.Duration) { v.Advance(d) }
	return v
}

func TestPlayerRateVirtualTime(t *testing.T) {
	paths, all := twoDumps(t)
	for _, rate := range []float64{1, 2, 0.5, 10} {
		t.Run(fmt.Sprint("rate=", rate), func(t *testing.T) {
			p, err := Open(paths, Options{Rate: rate})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			v := virtualPlayer(p)
			var at []int64
			st, err := p.Run(context.Background(), OutputFunc(func(m *Message) error {
				at = append(at, v.Now())
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range all {
				want := at[0] + int64(float64(g.ts-all[0].ts)/rate)
				if at[i] != want {
					t.Fatalf("message %d (ts %d) written at +%d, want +%d", i, g.ts, at[i]-at[0], want-at[0])
				}
			}
			if st.Samples != uint64(len(all)) || st.TimingP99 != 0 || st.TimingMax != 0 {
				t.Errorf("timing %+v: want %d samples, all on time", st, len(all))
			}
			if want := time.Duration(float64(all[len(all)-1].ts-all[0].ts) / rate); st.Elapsed != want {
				t.Errorf("elapsed %v, want %v", st.Elapsed, want)
			}
		})
	}
}

func TestPlayerLoopUntilCancelled(t *testing.T) {
	paths, all := twoDumps(t)
	p, err := Open(paths, Options{Loop: true, Topics: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out []got
	c := collect(&out)
	st, err := p.Run(ctx, OutputFunc(func(m *Message) error {
		if len(out) == 2*51+7 {
			cancel()
		}
		return c(m)
	}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if st.Passes != 3 || st.Messages != 2*51+8 {
		t.Fatalf("stats %+v, want 3 passes and %d messages", st, 2*51+8)
	}
	var one []got
	for _, g := range all {
		if g.topic == "b" {
			one = append(one, g)
		}
	}
	sameMsgs(t, out[:51], one)
	sameMsgs(t, out[51:102], one)
	sameMsgs(t, out[102:], one[:8])
}

func TestPlayerPauseStepResume(t *testing.T) {
	paths, all := twoDumps(t)
	p, err := Open(paths, Options{Rate: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	virtualPlayer(p)
	ch := make(chan got)
	var one []got
	c := collect(&one)
	p.Pause()
	done := make(chan Stats)
	go func() {
		st, err := p.Run(context.Background(), OutputFunc(func(m *Message) error {
			one = one[:0]
			c(m)
			ch <- one[0]
			return nil
		}))
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	quiet := func() {
		t.Helper()
		select {
		case g := <-ch:
			t.Fatalf("message %s seq %d delivered while paused", g.topic, g.seq)
		case <-time.After(20 * time.Millisecond):
		}
	}
	quiet()
	var out []got
	for i := 0; i < 3; i++ {
		p.Step()
		out = append(out, <-ch)
		quiet()
	}
	p.Resume()
	for len(out) < len(all) {
		out = append(out, <-ch)
	}
	st := <-done
	sameMsgs(t, out, all)
	if st.Samples != uint64(len(all)-3) {
		t.Errorf("%d timing samples, want %d (stepped messages are not measured)", st.Samples, len(all)-3)
	}
}

func TestPlayerBadInput(t *testing.T) {
	paths, _ := twoDumps(t)
	junk := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(junk, []byte("not a dump at all"), 0o644)
	f := func(paths []string, opts Options, want error) {
		t.Helper()
		p, err := Open(paths, opts)
		if err == nil {
			p.Close()
		}
		if !errors.Is(err, want) {
			t.Errorf("Open(%v, %+v): %v, want %v", paths, opts, err, want)
		}
	}
	f(paths, Options{Rate: -1}, ErrOptions)
	f(paths, Options{Topics: []string{"[a"}}, ErrOptions)
	f(paths, Options{Start: -1}, ErrOptions)
	f([]string{junk}, Options{}, dumpfile.ErrUnknownFormat)
	if _, err := Open([]string{paths[0], junk}, Options{}); err == nil || !strings.Contains(err.Error(), junk+": ") ||
		!strings.Contains(err.Error(), `starts with "not a du"`) {
		t.Errorf("junk input: %v, want its name and first bytes", err)
	}
	cut := filepath.Join(t.TempDir(), "cut.mcap")
	os.WriteFile(cut, append(append([]byte{}, mcap.Magic[:]...), 1, 200, 0, 0, 0, 0, 0, 0, 0), 0o644)
	var ce *mcap.CorruptError
	if _, err := Open([]string{cut}, Options{}); !errors.As(err, &ce) || ce.File != cut {
		t.Errorf("truncated MCAP: %v, want a CorruptError naming %s", err, cut)
	}
	f([]string{filepath.Join(t.TempDir(), "missing.pack")}, Options{}, os.ErrNotExist)
	if _, err := Open(nil, Options{}); err == nil {
		t.Error("Open with no dump succeeded")
	}

	p, err := Open(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	boom := errors.New("boom")
	n := 0
	st, err := p.Run(context.Background(), OutputFunc(func(m *Message) error {
		if n++; n == 5 {
			return boom
		}
		return nil
	}))
	if !errors.Is(err, boom) || st.Messages != 4 {
		t.Errorf("output error: %v after %d messages, want boom after 4", err, st.Messages)
	}
	if _, err := p.Run(context.Background(), Discard{}); err == nil {
		t.Error("second Run succeeded")
	}
}

func TestPlayerCorruptFrame(t *testing.T) {
	paths, _ := twoDumps(t)
	b, err := os.ReadFile(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	// flip the last data byte of the second frame: the replay starts, then
	// meets the damage
	r, err := pack.Open(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	offs := r.FrameOffsets()
	r.Close()
	b[offs[2]-1] ^= 0xff
	bad := filepath.Join(t.TempDir(), "bad.pack")
	os.WriteFile(bad, b, 0o644)
	p, err := Open([]string{paths[0], bad}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st, err := p.Run(context.Background(), Discard{})
	var ce *pack.CorruptError
	if !errors.As(err, &ce) || ce.Path != bad || st.Messages == 0 {
		t.Fatalf("err %v after %d messages, want a *pack.CorruptError naming %s", err, st.Messages, bad)
	}
}

func TestPlayerRangeAndProgress(t *testing.T) {
	paths, all := twoDumps(t)
	p, err := Open(paths, Options{Start: 100, Duration: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if from, to := p.Range(); from != 1100 || to != 2100 {
		t.Errorf("range %d..%d, want 1100..2100", from, to)
	}
	st, err := p.Run(context.Background(), Discard{})
	if err != nil {
		t.Fatal(err)
	}
	n, b, pos := p.Progress()
	if n != st.Messages || b != st.Bytes || pos != st.LastNs || st.FirstNs != 1100 || st.LastNs != 1990 {
		t.Errorf("progress %d msgs %d bytes at %d; stats %+v", n, b, pos, st)
	}
	q, err := Open(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if from, to := q.Range(); from != all[0].ts || to != all[len(all)-1].ts {
		t.Errorf("whole range %d..%d, messages %d..%d", from, to, all[0].ts, all[len(all)-1].ts)
	}
}

// As fast as possible the player publishes its progress in batches; when
// Run returns, Progress says exactly what was written.
func TestProgressExactAfterRun(t *testing.T) {
	paths, all := twoDumps(t)
	p, err := Open(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st, err := p.Run(context.Background(), Discard{})
	if err != nil {
		t.Fatal(err)
	}
	n, b, pos := p.Progress()
	if n != st.Messages || n != uint64(len(all)) || b != st.Bytes || pos != st.LastNs {
		t.Fatalf("Progress %d msgs %d bytes at %d; Run wrote %d msgs (%d in the dumps) %d bytes, last at %d",
			n, b, pos, st.Messages, len(all), st.Bytes, st.LastNs)
	}
}
