package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/edr-lite/edr-lite/replay"
)

// Several players on one timeline: --player TO=DUMP[,DUMP] replays more
// dumps to another output, --live udp:ADDR=TOPIC forwards datagrams that
// arrive while replaying; one replay.Orchestrator orders them all. Declared
// and read here apart from replay's own flags (replay.go).

// playerFlags are the values of those flags.
type playerFlags struct {
	players, lives multiFlag
}

func declarePlayerFlags(c *command) *playerFlags {
	f := &playerFlags{}
	c.fs.Var(&f.players, "player", "another player on the same timeline: TO=DUMP[,DUMP] replays those dumps to TO (shm:DIR or udp:HOST:PORT) (repeatable)")
	c.fs.Var(&f.lives, "live", "a live player on the timeline: udp:HOST:PORT=TOPIC forwards each datagram received there to -o as TOPIC (repeatable)")
	return f
}

func (f *playerFlags) active() bool { return len(f.players) > 0 || len(f.lives) > 0 }

// playerSpec is one --player.
type playerSpec struct {
	to    string
	dumps []string
}

// liveSpec is one --live.
type liveSpec struct{ addr, topic string }

// parse checks the flags; given are the flags on the command line. An
// error is bad usage.
func (f *playerFlags) parse(given map[string]bool) ([]playerSpec, []liveSpec, error) {
	for _, n := range []string{"loop", "loop-count", "delay", "start-paused", "control", "clock", "spin"} {
		if given[n] {
			return nil, nil, fmt.Errorf("--%s is for one player: with --player or --live the orchestrator paces the timeline", n)
		}
	}
	var ps []playerSpec
	for _, p := range f.players {
		to, dumps, ok := strings.Cut(p, "=")
		if !ok || to == "" || dumps == "" {
			return nil, nil, fmt.Errorf("--player %q: want TO=DUMP[,DUMP], e.g. udp:127.0.0.1:30500=b.pack", p)
		}
		ps = append(ps, playerSpec{to: to, dumps: splitList(dumps)})
	}
	var ls []liveSpec
	for _, l := range f.lives {
		rest, ok := strings.CutPrefix(l, "udp:")
		addr, topic, ok2 := strings.Cut(rest, "=")
		if !ok || !ok2 || addr == "" || topic == "" {
			return nil, nil, fmt.Errorf("--live %q: want udp:HOST:PORT=TOPIC", l)
		}
		ls = append(ls, liveSpec{addr: addr, topic: topic})
	}
	return ps, ls, nil
}

// outputFor builds the output TO names (shm:DIR or udp:HOST:PORT), a shm
// one with so's capacity and keep.
func outputFor(to string, so replay.ShmOptions) (replay.Output, error) {
	scheme, rest, _ := strings.Cut(to, ":")
	switch {
	case scheme == "shm" && rest != "":
		so.Dir = rest
		return replay.NewShm(so), nil
	case scheme == "udp" && rest != "":
		return replay.NewUDP(replay.UDPOptions{Base: rest}), nil
	}
	return nil, fmt.Errorf("%q: want shm:DIR or udp:HOST:PORT", to)
}

// players opens the extra players and live players of orchestrator o.
// Close them with the returned function.
type extraPlayers struct {
	players []*replay.Player
	pouts   []replay.Output
	lives   []*replay.LiveUDP
	louts   []replay.Output
	names   []string
}

func (x *extraPlayers) close() {
	for _, p := range x.players {
		p.Close()
	}
	for _, l := range x.lives {
		l.Close()
	}
}

// openExtra opens the --player and --live players; mainTo is the main
// output's --to (where live datagrams go). Errors wrapping
// replay.ErrOptions are bad usage.
func openExtra(o *replay.Orchestrator, ps []playerSpec, ls []liveSpec, mainTo string, so replay.ShmOptions) (*extraPlayers, error) {
	x := &extraPlayers{}
	for _, s := range ps {
		out, err := outputFor(s.to, so)
		if err != nil {
			x.close()
			return nil, fmt.Errorf("%w: --player %v", replay.ErrOptions, err)
		}
		p, err := replay.Open(s.dumps, replay.Options{Turn: o.Join("player " + s.to)})
		if err != nil {
			x.close()
			return nil, err
		}
		x.players, x.pouts = append(x.players, p), append(x.pouts, out)
		x.names = append(x.names, fmt.Sprintf("player %s (%s)", s.to, strings.Join(s.dumps, ", ")))
	}
	for _, s := range ls {
		out, err := outputFor(mainTo, so)
		if err != nil {
			x.close()
			return nil, fmt.Errorf("%w: --live forwards to -o: %v", replay.ErrOptions, err)
		}
		l, err := replay.ListenLive(replay.LiveOptions{Addr: s.addr, Topic: s.topic}, o)
		if err != nil {
			x.close()
			return nil, err
		}
		x.lives, x.louts = append(x.lives, l), append(x.louts, out)
		x.names = append(x.names, fmt.Sprintf("live udp:%s -> %s", l.Addr(), s.topic))
	}
	return x, nil
}

// playMany is replay with several players (no closed loop): every player
// on its own goroutine, live ones until the others are done; a summary
// per player.
func playMany(c *command, main *replay.Player, out replay.Output, x *extraPlayers, rate float64) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	liveCtx, stopLive := context.WithCancel(ctx)
	defer stopLive()
	var dumps, lives sync.WaitGroup
	n := len(x.players) + len(x.lives)
	stats, errs := make([]replay.Stats, n), make([]error, n)
	for i, p := range x.players {
		dumps.Add(1)
		go func() { defer dumps.Done(); stats[i], errs[i] = p.Run(ctx, x.pouts[i]) }()
	}
	for i, l := range x.lives {
		j := len(x.players) + i
		lives.Add(1)
		go func() { defer lives.Done(); stats[j], errs[j] = l.Run(liveCtx, x.louts[i]) }()
	}
	st, err := main.Run(ctx, out)
	dumps.Wait()
	stopLive()
	lives.Wait()
	interrupted := ctx.Err() != nil
	printReplaySummary(c.e, &st, rate, false)
	for i, name := range x.names {
		fmt.Fprintf(c.e.stdout, "%s: %d messages, %d dropped\n", name, stats[i].Messages, stats[i].Dropped)
	}
	if interrupted {
		fmt.Fprintln(c.e.stdout, "interrupted")
	}
	for _, e := range append([]error{err}, errs...) {
		if e != nil && !(interrupted && errors.Is(e, context.Canceled)) {
			return c.fail(e)
		}
	}
	return exitOK
}
