package replay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// orchLog records what several players wrote, in the order written.
type orchLog struct {
	mu  sync.Mutex
	out []string
}

func (g *orchLog) output(player string) Output {
	return OutputFunc(func(m *Message) error {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.out = append(g.out, fmt.Sprintf("%s %s %d", player, m.Topic, m.TimeNs))
		return nil
	})
}

// twoPlayerDumps: player A's topic a every 10 ns from 0, player B's topic b
// every 10 ns from 5, and b also at every 30 ns (a tie with a).
func twoPlayerDumps(t *testing.T) (a, b string) {
	var ra, rb []rec
	for i := 0; i < 30; i++ {
		ra = append(ra, rec{name: "a", done: t0 + int64(i)*10, data: []byte{byte(i)}})
		rb = append(rb, rec{name: "b", done: t0 + int64(i)*10 + 5, data: []byte{byte(i)}})
		if i%3 == 0 {
			rb = append(rb, rec{name: "b", done: t0 + int64(i)*10 + 10, data: []byte{byte(i)}})
		}
	}
	return writeDump(t, "a.pack", ra, nil), writeDump(t, "b.pack", rb, nil)
}

func runTwo(t *testing.T, a, b string, rate float64) []string {
	t.Helper()
	o, err := NewOrchestrator(rate)
	if err != nil {
		t.Fatal(err)
	}
	ta, tb := o.Join("a"), o.Join("b")
	pa, err := Open([]string{a}, Options{Turn: ta})
	if err != nil {
		t.Fatal(err)
	}
	defer pa.Close()
	pb, err := Open([]string{b}, Options{Turn: tb})
	if err != nil {
		t.Fatal(err)
	}
	defer pb.Close()
	g := &orchLog{}
	var wg sync.WaitGroup
	wg.Add(2)
	for _, x := range []struct {
		p    *Player
		name string
	}{{pa, "A"}, {pb, "B"}} {
		go func() {
			defer wg.Done()
			if _, err := x.p.Run(context.Background(), g.output(x.name)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	return g.out
}

// TestOrchestratorOrder: two players, each on its own goroutine, write
// in one order: by message time, ties to the player that joined first,
// on every run; the same order as one player merging both dumps.
func TestOrchestratorOrder(t *testing.T) {
	a, b := twoPlayerDumps(t)
	p, err := Open([]string{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var want []string
	p.Run(context.Background(), OutputFunc(func(m *Message) error {
		who := "A"
		if m.Topic.Name == "b" {
			who = "B"
		}
		want = append(want, fmt.Sprintf("%s %s %d", who, m.Topic, m.TimeNs))
		return nil
	}))
	for run := 0; run < 10; run++ {
		got := runTwo(t, a, b, 0)
		if len(got) != len(want) {
			t.Fatalf("run %d: %d messages, want %d", run, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("run %d, message %d: %s, want %s", run, i, got[i], want[i])
			}
		}
	}
}

// TestOrchestratorTimed: at rate 1 the timeline is paced by the
// orchestrator (the whole replay lasts at least the recorded span); a live
// player's datagrams take their place on it.
func TestOrchestratorTimed(t *testing.T) {
	var r []rec
	for i := 0; i < 20; i++ {
		r = append(r, rec{name: "a", done: t0 + int64(i)*10e6, data: []byte{byte(i)}})
	}
	dump := writeDump(t, "a.pack", r, nil)
	o, err := NewOrchestrator(1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open([]string{dump}, Options{Turn: o.Join("dump")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	lv, err := ListenLive(LiveOptions{Addr: "127.0.0.1:0", Topic: "live/x"}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer lv.Close()
	g := &orchLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Stats)
	go func() {
		st, err := lv.Run(ctx, g.output("L"))
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	go func() {
		c, err := net.Dial("udp", lv.Addr().String())
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		time.Sleep(50 * time.Millisecond)
		for i := 0; i < 3; i++ {
			c.Write([]byte{byte(i)})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	start := time.Now()
	if _, err := p.Run(context.Background(), g.output("D")); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	cancel()
	lst := <-done
	if took < 190*time.Millisecond {
		t.Errorf("20 messages 10ms apart replayed in %v at rate 1", took)
	}
	if lst.Messages != 3 {
		t.Fatalf("live: %+v\n%v", lst, g.out)
	}
	// each live message sits in time order among the recorded ones
	var last int64
	for _, line := range g.out {
		var who, topic string
		var ts int64
		fmt.Sscanf(line, "%s %s %d", &who, &topic, &ts)
		if ts < last {
			t.Errorf("%s goes back in time (after %d):\n%v", line, last, g.out)
		}
		last = ts
	}
}

func TestOrchestratorOptions(t *testing.T) {
	if _, err := NewOrchestrator(-1); err == nil {
		t.Error("negative rate accepted")
	}
	o, _ := NewOrchestrator(0)
	a, _ := twoPlayerDumps(t)
	if _, err := Open([]string{a}, Options{Turn: o.Join("x"), Rate: 1}); err == nil {
		t.Error("a player with a turn and a rate of its own accepted")
	}
}

func TestLoopAddPlayerNeedsTurns(t *testing.T) {
	dump := loopDump(t)
	a, _ := twoPlayerDumps(t)
	ls := []Listen{{Shm: t.TempDir()}}
	l, err := NewLoop([]string{dump}, Options{}, LoopOptions{Expect: []string{"planner/*"}, Listen: ls})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o, _ := NewOrchestrator(0)
	p, err := Open([]string{a}, Options{Turn: o.Join("x")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := l.AddPlayer(p, Discard{}); !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "need an orchestrator") {
		t.Errorf("AddPlayer to a loop without turns: %v", err)
	}
	l2, err := NewLoop([]string{dump}, Options{Turn: o.Join("main")}, LoopOptions{Expect: []string{"planner/*"}, Listen: ls})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	o2, _ := NewOrchestrator(0)
	p2, err := Open([]string{a}, Options{Turn: o2.Join("y")})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if err := l2.AddPlayer(p2, Discard{}); !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "the loop's orchestrator") {
		t.Errorf("AddPlayer with another orchestrator's turn: %v", err)
	}
	p3, err := Open([]string{dump}, Options{Turn: o.Join("z")})
	if err != nil {
		t.Fatal(err)
	}
	defer p3.Close()
	if err := l2.AddPlayer(p3, Discard{}); !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "planner/brake is expected") {
		t.Errorf("AddPlayer of expected topics: %v", err)
	}
}

// TestOrchestratorLiveBeforeStart: a datagram that arrives before the dump
// player's first turn waits for the timeline to start, and goes after the
// recording's first message (it once took the time 0 and made the
// recording due decades later).
func TestOrchestratorLiveBeforeStart(t *testing.T) {
	var r []rec
	for i := 0; i < 5; i++ {
		r = append(r, rec{name: "a", done: t0 + int64(i)*10e6, data: []byte{byte(i)}})
	}
	dump := writeDump(t, "a.pack", r, nil)
	o, _ := NewOrchestrator(1)
	p, err := Open([]string{dump}, Options{Turn: o.Join("dump")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	lv, err := ListenLive(LiveOptions{Addr: "127.0.0.1:0", Topic: "live/x"}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer lv.Close()
	g := &orchLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	liveCtx, stopLive := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := lv.Run(liveCtx, g.output("L")); err != nil {
			t.Error(err)
		}
	}()
	c, err := net.Dial("udp", lv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{1})
	time.Sleep(100 * time.Millisecond) // the datagram is read and waits
	if _, err := p.Run(ctx, g.output("D")); err != nil {
		t.Fatalf("the recording did not replay: %v\n%v", err, g.out)
	}
	stopLive()
	<-done
	if len(g.out) != 6 || !strings.HasPrefix(g.out[0], "D a ") {
		t.Fatalf("%v", g.out)
	}
	for _, line := range g.out {
		var who, topic string
		var ts int64
		fmt.Sscanf(line, "%s %s %d", &who, &topic, &ts)
		if ts < t0 {
			t.Errorf("%s before the recording's start %d", line, t0)
		}
	}
}

// closeFails is an output whose Close fails: a live player's normal stop
// (its context ends) reports that failure instead of losing it.
type closeFails struct{}

func (closeFails) Open([]Topic) error   { return nil }
func (closeFails) Write(*Message) error { return nil }
func (closeFails) Close() error         { return errCloseFails }

var errCloseFails = errors.New("close fails")

func TestLiveRunReportsCloseError(t *testing.T) {
	o, err := NewOrchestrator(0)
	if err != nil {
		t.Fatal(err)
	}
	lv, err := ListenLive(LiveOptions{Addr: "127.0.0.1:0", Topic: "live/x"}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer lv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := lv.Run(ctx, closeFails{}); !errors.Is(err, errCloseFails) {
		t.Fatalf("Run after the context ended: %v, want the output's Close error", err)
	}
}
