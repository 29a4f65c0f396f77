package replay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// LiveOptions configure a LiveUDP player.
type LiveOptions struct {
	// Addr is the "host:port" to listen on.
	Addr string
	// Topic is the topic its datagrams are replayed as; Type its type.
	Topic, Type string
}

// LiveUDP is a live player for an Orchestrator: it receives datagrams
// while dumps replay (a real sensor beside recorded ones) and writes each,
// in its turn, to its Output as a message of one topic whose time is its
// arrival on the orchestrator's timeline (Orchestrator.Timeline; a datagram
// that arrives before the first recorded message was replayed waits for
// it) and whose producer time is unknown (0). One datagram is held at a time: while it
// waits for its turn, the socket buffers the next ones (the kernel drops
// what does not fit; Stats.Dropped counts what the output refused).
//
// Run once, from one goroutine; Close after Run returned.
type LiveUDP struct {
	opts   LiveOptions
	conn   *net.UDPConn
	o      *Orchestrator
	turn   *TurnToken
	topics []Topic
	hold   func(ctx context.Context, ti int, ts, gen int64) (bool, error) // a closed loop's lockstep
	buf    []byte
	m      Message
}

// ListenLive binds opts.Addr and joins o as a live player.
func ListenLive(opts LiveOptions, o *Orchestrator) (*LiveUDP, error) {
	if opts.Topic == "" {
		return nil, fmt.Errorf("%w: a live player needs a topic name", ErrOptions)
	}
	a, err := net.ResolveUDPAddr("udp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: live udp address %q: %v", ErrOptions, opts.Addr, err)
	}
	conn, err := net.ListenUDP("udp", a)
	if err != nil {
		return nil, fmt.Errorf("replay: live udp %s: %w", opts.Addr, err)
	}
	return &LiveUDP{opts: opts, conn: conn, o: o, turn: o.JoinLive("live " + opts.Addr),
		topics: []Topic{{Name: opts.Topic, Type: ingest.Named(opts.Type)}}, buf: make([]byte, MaxDatagram)}, nil
}

// Addr returns the address the socket is bound to.
func (l *LiveUDP) Addr() net.Addr { return l.conn.LocalAddr() }

// Topics returns its one topic.
func (l *LiveUDP) Topics() []Topic { return l.topics }

// Run receives and writes to out until ctx ends (a normal stop: Run
// returns the stats and nil) or out fails.
func (l *LiveUDP) Run(ctx context.Context, out Output) (Stats, error) {
	var st Stats
	defer l.turn.Leave()
	if err := out.Open(l.topics); err != nil {
		return st, err
	}
	began := time.Now()
	// run returns only with an error: ctx's end is the normal stop, after
	// which the output's Close decides the result.
	err := l.run(ctx, out, &st)
	st.Elapsed = time.Since(began)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return st, err
}

func (l *LiveUDP) run(ctx context.Context, out Output, st *Stats) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		l.conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, _, err := l.conn.ReadFromUDP(l.buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return fmt.Errorf("replay: live udp %s: %w", l.opts.Addr, err)
		}
		ts, err := l.o.liveTime(ctx, time.Now().UnixNano())
		if err != nil {
			return err
		}
		if err := l.turn.Wait(ctx, ts); err != nil {
			return err
		}
		waited := false
		if l.hold != nil {
			if waited, err = l.hold(ctx, 0, ts, 0); err != nil {
				l.turn.Done()
				return err
			}
		}
		l.m = Message{Topic: &l.topics[0], Seq: st.Messages + st.Dropped, TimeNs: ts, DoneNs: ts, Data: l.buf[:n]}
		err = out.Write(&l.m)
		if waited {
			l.turn.Restart()
		}
		l.turn.Done()
		switch {
		case errors.Is(err, ErrTooLarge):
			st.Dropped++
		case err != nil:
			return fmt.Errorf("replay: live %s: %w", l.opts.Topic, err)
		default:
			if st.Messages == 0 {
				st.FirstNs = ts
			}
			st.Messages++
			st.Bytes += uint64(n)
			st.LastNs = ts
		}
	}
}

// Close closes the socket.
func (l *LiveUDP) Close() error { return l.conn.Close() }
