package step

import (
	"context"
	"sync"
)

// turns gives the replayed loops their ticks one at a time, in the
// recording's global sequence (the reference's ReplayOrchestrator and
// TurnToken: wait_turn(expected_seq), advance). Each loop runs on its own
// goroutine and holds a turnToken; a loop waits for the turn of its next
// tick's sequence number, runs the tick, and ends the turn, which wakes
// the owner of the next one. Whatever the scheduling of the goroutines,
// ticks run in one order, never two at once.
//
// replay.Orchestrator is not used: it lives in package replay (which links
// the recorder, sockets and Lua), orders its players by message time and
// then by the order they joined (not by a recorded sequence), and waits
// for every player to announce its next message because it cannot know
// the schedule ahead; here the whole schedule is read from the recording
// before the first tick.
type turns struct {
	mu     sync.Mutex
	next   int   // the sequence number whose turn it is
	owner  []int // sequence number -> token
	tokens []*turnToken
}

type turnToken struct {
	t    *turns
	wake chan struct{}
}

// newTurns returns the turns of a schedule: owner[seq] is the token (loop)
// whose tick seq is.
func newTurns(owner []int, loops int) *turns {
	t := &turns{owner: owner}
	for range loops {
		t.tokens = append(t.tokens, &turnToken{t: t, wake: make(chan struct{}, 1)})
	}
	return t
}

// wait returns when it is the turn of sequence number seq (which must be
// this token's), or ctx's error.
func (k *turnToken) wait(ctx context.Context, seq int) error {
	for {
		k.t.mu.Lock()
		now := k.t.next
		k.t.mu.Unlock()
		if now == seq {
			return nil
		}
		select {
		case <-k.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// done ends the current turn and wakes the owner of the next.
func (k *turnToken) done() {
	t := k.t
	t.mu.Lock()
	t.next++
	var w *turnToken
	if t.next < len(t.owner) {
		w = t.tokens[t.owner[t.next]]
	}
	t.mu.Unlock()
	if w != nil {
		select {
		case w.wake <- struct{}{}:
		default: // already woken
		}
	}
}
