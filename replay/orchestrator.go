package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/edr-lite/edr-lite/internal/clock"
)

// Orchestrator gives several players one timeline (the reference's
// ReplayOrchestrator): each player announces its next message's time and
// waits for its turn (TurnToken.Wait), writes it, and ends its turn
// (TurnToken.Done). One turn is held at a time, so the players' outputs
// see their messages one by one in one order:
//
//   - by message time, smallest first;
//   - equal times: the player that joined first (Join order; on the
//     command line, the main dumps, then each --player, then each --live);
//   - within a player, its own order (a Player's merge of its dumps).
//
// A turn is granted only when every player that replays dumps has
// announced its next message (or left): a player reading its next message
// holds the others back, so the order never depends on which goroutine
// runs first. A live player (JoinLive: messages that arrive while
// replaying, whose time is their arrival on the timeline) holds nobody
// back until it has a message. In timed modes the orchestrator paces the
// timeline: a turn is granted when its time is due (start + (time - first
// time) / rate); an earlier message announced meanwhile (a live one) goes
// first. Time spent inside turns (a closed loop waiting for the system
// under test in lockstep) is not made up: the timeline restarts at the
// next turn.
//
// An Orchestrator is safe for concurrent use; each TurnToken by one
// goroutine (its player's).
type Orchestrator struct {
	rate float64
	clk  clock.Clock

	mu        sync.Mutex
	tokens    []*TurnToken
	holder    int           // index of the token holding the turn, -1 none
	changed   chan struct{} // closed and replaced on every change
	started   bool
	base      int64 // wall time of the timeline's baseTs
	baseTs    int64
	grantedTs int64 // message time of the turn held (or last held)
	grants    uint64
}

// TurnToken is one player's place in an Orchestrator.
type TurnToken struct {
	o       *Orchestrator
	i       int
	name    string
	live    bool
	pending bool // has announced a message and waits for its turn
	head    int64
	left    bool
}

// NewOrchestrator returns an orchestrator pacing its timeline at rate (0:
// as fast as possible; 1: the recorded gaps; 2: twice as fast).
func NewOrchestrator(rate float64) (*Orchestrator, error) {
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("%w: orchestrator rate %v", ErrOptions, rate)
	}
	return &Orchestrator{rate: rate, clk: clock.System{}, holder: -1, changed: make(chan struct{})}, nil
}

// Join adds a player that replays dumps; name is for errors and reports.
// Every player joins before any waits for a turn.
func (o *Orchestrator) Join(name string) *TurnToken { return o.join(name, false) }

// JoinLive adds a live player: its messages' time is their arrival on the
// timeline (Timeline), and it holds nobody back while it has none.
func (o *Orchestrator) JoinLive(name string) *TurnToken { return o.join(name, true) }

func (o *Orchestrator) join(name string, live bool) *TurnToken {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := &TurnToken{o: o, i: len(o.tokens), name: name, live: live}
	o.tokens = append(o.tokens, t)
	return t
}

// Grants returns how many turns were granted.
func (o *Orchestrator) Grants() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.grants
}

// Timeline returns the message time the timeline has reached at wall time
// wallNs, and false before the timeline has started (no turn granted yet).
func (o *Orchestrator) Timeline(wallNs int64) (int64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.started {
		return 0, false
	}
	return o.timelineLocked(wallNs), true
}

func (o *Orchestrator) timelineLocked(wallNs int64) int64 {
	rate := o.rate
	if rate == 0 {
		rate = 1
	}
	return o.baseTs + int64(float64(wallNs-o.base)*rate)
}

// liveTime is where a live message that arrived at wall time wallNs goes
// on the timeline. Before the timeline has started it waits for the first
// turn of a dump player (a live message never precedes the recording's
// start); when no dump player remains, the timeline starts at the wall
// clock.
func (o *Orchestrator) liveTime(ctx context.Context, wallNs int64) (int64, error) {
	o.mu.Lock()
	for !o.started {
		dumps := false
		for _, t := range o.tokens {
			dumps = dumps || (!t.live && !t.left)
		}
		if !dumps {
			now := o.clk.Now()
			o.base, o.baseTs, o.started = now, now, true
			break
		}
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		o.mu.Lock()
	}
	ts := o.timelineLocked(max(wallNs, o.base))
	o.mu.Unlock()
	return ts, nil
}

func (o *Orchestrator) signalLocked() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// next returns the token whose message goes next, or nil while a player
// that replays dumps has not announced its next message (or a turn is
// held).
func (o *Orchestrator) nextLocked() *TurnToken {
	if o.holder >= 0 {
		return nil
	}
	var best *TurnToken
	for _, t := range o.tokens {
		switch {
		case t.left:
		case !t.pending:
			if !t.live {
				return nil
			}
		case best == nil || t.head < best.head: // equal: the earlier joined stays
			best = t
		}
	}
	return best
}

// Wait announces this player's next message, at message time ts, and
// returns when it is this player's turn (and, in timed modes, its time is
// due). The caller writes the message and calls Done. It returns ctx's
// error when ctx ends first.
func (t *TurnToken) Wait(ctx context.Context, ts int64) error {
	o := t.o
	o.mu.Lock()
	if t.left {
		o.mu.Unlock()
		return errors.New("replay: Wait after Leave")
	}
	t.head, t.pending = ts, true
	o.signalLocked()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var wait time.Duration
		if o.nextLocked() == t {
			now := o.clk.Now()
			if o.rate > 0 {
				if !o.started {
					o.base, o.baseTs, o.started = now, ts, true
				}
				due := o.base + int64(float64(ts-o.baseTs)/o.rate)
				wait = time.Duration(due - now)
			}
			if wait <= 0 {
				if o.rate == 0 && !o.started {
					o.base, o.baseTs, o.started = now, ts, true
				}
				o.holder, t.pending = t.i, false
				o.grants++
				o.grantedTs = ts
				o.signalLocked() // live players wait for the timeline to start
				o.mu.Unlock()
				return nil
			}
		}
		ch := o.changed
		o.mu.Unlock()
		var tc <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			tc = timer.C
		}
		select {
		case <-ch:
		case <-tc:
		case <-ctx.Done():
			o.mu.Lock()
			t.pending = false
			o.signalLocked()
			o.mu.Unlock()
			return ctx.Err()
		}
		if timer != nil && !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		o.mu.Lock()
	}
}

// Done ends this player's turn.
func (t *TurnToken) Done() {
	o := t.o
	o.mu.Lock()
	if o.holder == t.i {
		o.holder = -1
		o.signalLocked()
	}
	o.mu.Unlock()
}

// Restart, during this player's turn, restarts the timeline at the turn's
// message: the next messages are due after their recorded gaps from now.
// A closed loop calls it when its turn waited for the system under test,
// so the wait is not made up by rushing what follows.
func (t *TurnToken) Restart() {
	o := t.o
	o.mu.Lock()
	if o.holder == t.i && o.started {
		o.base, o.baseTs = o.clk.Now(), o.grantedTs
	}
	o.mu.Unlock()
}

// Leave says this player has no more messages.
func (t *TurnToken) Leave() {
	o := t.o
	o.mu.Lock()
	t.left, t.pending = true, false
	if o.holder == t.i {
		o.holder = -1
	}
	o.signalLocked()
	o.mu.Unlock()
}
