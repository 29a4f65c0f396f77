package replay

import (
	"context"
	"errors"
	"fmt"
	"path"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// Options configure a Player. The zero value replays every topic of the
// dumps once, as fast as possible.
type Options struct {
	// Topics are globs (path.Match syntax) over "name#channel" and over the
	// name alone; a topic is replayed when it matches one. Empty means all.
	Topics []string
	// Start skips the first Start of message time, counted from the
	// earliest message of the dumps.
	Start time.Duration
	// Duration stops after this much message time from the start (0 = to
	// the end).
	Duration time.Duration
	// UntilNs stops after this message time (UNIX ns; 0 = no limit). With
	// Duration as well, the earlier end wins.
	UntilNs int64
	// Rate is the timing mode: 0 replays as fast as possible, 1 in real
	// time (the recorded gaps between messages), any other positive value
	// scaled (2 = twice as fast, 0.5 = half speed).
	Rate float64
	// Loop starts over from the start when the end is reached, until the
	// context is cancelled.
	Loop bool
	// Spin, when positive, is how long before a due time the player stops
	// sleeping and polls the clock (yielding between polls): better timing
	// on an idle machine for a busy core, worse when the CPU is contended
	// (see BenchmarkTimingError). 0 sleeps only: on a Go timer until 2ms
	// before, then in clock_nanosleep (Linux), whose precision is the
	// kernel's timer slack rather than the millisecond of Go's timers.
	Spin time.Duration
}

// Topic is one topic a Player replays. Index is its position in
// Player.Topics (sorted by String), which Message.Topic points into.
type Topic struct {
	Index         int
	Name, Channel string
	// Type is the topic's type as the dump records it: its first (a
	// message's own is Message.Type), raw bytes named by the accounting in
	// a dump without types.
	Type     ingest.Type
	Messages uint64 // messages of the topic in the dumps (whole files)
}

// String returns "name" or "name#channel" when there is a channel.
func (t *Topic) String() string { return mcap.TopicName(t.Name, t.Channel) }

// Message is one recorded message handed to an Output. Meta and Data alias
// the dump's mapping and are valid only until Write returns.
type Message struct {
	Topic  *Topic
	Seq    uint64 // per topic, counting from 0 in each pass
	TimeNs int64  // message time: capture time (pack done_ts, else gen_ts, else frame time; MCAP log_time)
	GenNs  int64  // producer time as recorded (0 = unknown)
	DoneNs int64  // capture time as recorded (0 = unknown)
	Meta   []byte
	Data   []byte // nil when the message has no data block
	// Type is the message's type (never nil): the same pointer for the
	// messages of a topic until its type changes in the dump.
	Type *ingest.Type
}

// Output receives replayed messages. Open is called once with every topic
// before the first Write; Write is called from the player's goroutine, one
// message at a time, in time order; Close once at the end. A Write that
// returns an error wrapping ErrTooLarge drops that message (counted in
// Stats.Dropped) and the replay goes on; any other error stops it.
type Output interface {
	Open(topics []Topic) error
	Write(m *Message) error
	Close() error
}

// Stats say what a replay did.
type Stats struct {
	Messages uint64 // messages written to the output
	Bytes    uint64 // their data bytes
	Dropped  uint64 // messages the output refused as too large
	Passes   int    // passes over the range (more than 1 with Loop)
	Elapsed  time.Duration
	FirstNs  int64 // message time of the first message replayed
	LastNs   int64 // message time of the last message replayed
	// Timing error in real-time and scaled modes: how late each message
	// was handed to the output compared with its due time (the recorded
	// gap divided by the rate). Samples is 0 when replaying as fast as
	// possible. Messages delivered by Step are not measured.
	Samples                         uint64
	TimingP50, TimingP99, TimingMax time.Duration
}

// MsgsPerSec returns Messages / Elapsed.
func (s *Stats) MsgsPerSec() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Messages) / s.Elapsed.Seconds()
}

// BytesPerSec returns Bytes / Elapsed.
func (s *Stats) BytesPerSec() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Bytes) / s.Elapsed.Seconds()
}

type topicKey struct{ name, channel string }

// Player replays one or more dumps, pack or MCAP in any mix, merged message
// by message in time order (dumpfile.Messages), to an Output.
//
// Run must be called once, from one goroutine; Pause, Resume, Step and
// Progress may be called from any goroutine while it runs. Close only after
// Run has returned: it unmaps the dumps.
type Player struct {
	opts    Options
	sources []*dumpfile.Source
	owned   bool
	msgs    *dumpfile.Messages
	topics  []Topic
	index   map[topicKey]int // -1: filtered out
	seq     []uint64
	firstNs int64 // earliest message of the dumps
	startNs int64
	endNs   int64 // inclusive; 0 = none
	lastNs  int64 // latest message time of the last frames (for progress)

	clk   clock.Clock
	sleep func(ctx context.Context, d time.Duration, wake <-chan struct{}) error // tests
	nap   func(d time.Duration)                                                  // tests
	spin  time.Duration
	timer *time.Timer // reused by timerSleep

	mu     sync.Mutex
	paused bool
	steps  int
	wake   chan struct{}
	pauseF atomic.Bool

	ran      atomic.Bool
	nMsgs    atomic.Uint64
	nBytes   atomic.Uint64
	position atomic.Int64
}

// Open opens the dumps at paths, pack or MCAP (dumpfile.Open: a file of
// another format is an error naming it and what it starts with), and
// returns a Player over them; Close closes them.
func Open(paths []string, opts Options) (*Player, error) {
	if len(paths) == 0 {
		return nil, errors.New("replay: no dump to replay")
	}
	var srcs []*dumpfile.Source
	closeAll := func() {
		for _, s := range srcs {
			s.Close()
		}
	}
	for _, p := range paths {
		s, err := dumpfile.Open(p)
		if err != nil {
			closeAll()
			return nil, err
		}
		srcs = append(srcs, s)
	}
	p, err := newPlayer(srcs, opts)
	if err != nil {
		closeAll()
		return nil, err
	}
	p.owned = true
	return p, nil
}

// New returns a Player over pack readers (not owned: Close leaves them
// open). It reads the readers' indexes and the first message to resolve
// topics and the time range.
func New(readers []*pack.Reader, opts Options) (*Player, error) {
	srcs := make([]*dumpfile.Source, len(readers))
	for i, r := range readers {
		s, err := dumpfile.FromPack(r)
		if err != nil {
			return nil, err
		}
		srcs[i] = s
	}
	return newPlayer(srcs, opts)
}

func newPlayer(sources []*dumpfile.Source, opts Options) (*Player, error) {
	if opts.Rate < 0 {
		return nil, fmt.Errorf("%w: rate %v is negative", ErrOptions, opts.Rate)
	}
	if opts.Start < 0 || opts.Duration < 0 {
		return nil, fmt.Errorf("%w: start and duration must not be negative", ErrOptions)
	}
	for _, g := range opts.Topics {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("%w: topic glob %q: %v", ErrOptions, g, err)
		}
	}
	p := &Player{opts: opts, sources: sources, index: map[topicKey]int{},
		clk: clock.System{}, wake: make(chan struct{}, 1), spin: opts.Spin}
	p.sleep, p.nap = p.timerSleep, nap
	types := map[topicKey]ingest.Type{}
	counts := map[topicKey]uint64{}
	for _, s := range sources {
		for _, t := range s.Topics() {
			k := topicKey{t.Name, t.Channel}
			counts[k] += t.Messages
			if _, ok := types[k]; !ok {
				types[k] = t.Type
			}
		}
		p.lastNs = max(p.lastNs, s.EndNs())
	}
	for k, n := range counts {
		t := Topic{Name: k.name, Channel: k.channel, Messages: n, Type: types[k]}
		if !matchTopic(opts.Topics, &t) {
			p.index[k] = -1
			continue
		}
		p.topics = append(p.topics, t)
	}
	sort.Slice(p.topics, func(i, j int) bool { return p.topics[i].String() < p.topics[j].String() })
	for i := range p.topics {
		p.topics[i].Index = i
		p.index[topicKey{p.topics[i].Name, p.topics[i].Channel}] = i
	}
	p.seq = make([]uint64, len(p.topics))
	p.msgs = dumpfile.NewMessages(sources...)
	ok, err := p.msgs.Next()
	if err != nil {
		return nil, err
	}
	if ok {
		p.firstNs = p.msgs.Time()
	}
	p.startNs = p.firstNs + int64(opts.Start)
	if opts.Duration > 0 {
		p.endNs = p.startNs + int64(opts.Duration)
	}
	if opts.UntilNs != 0 && (p.endNs == 0 || opts.UntilNs < p.endNs) {
		p.endNs = opts.UntilNs
	}
	return p, nil
}

func matchTopic(globs []string, t *Topic) bool {
	if len(globs) == 0 {
		return true
	}
	full := pack.Topic(t.Name, t.Channel)
	for _, g := range globs {
		if ok, _ := path.Match(g, full); ok {
			return true
		}
		if ok, _ := path.Match(g, t.Name); ok {
			return true
		}
	}
	return false
}

// Topics returns the topics that will be replayed, sorted by String.
func (p *Player) Topics() []Topic { return p.topics }

// Range returns the message-time range to replay: from the start to the end
// (the Duration/UntilNs limit, or the latest message time of the dumps'
// last frames).
func (p *Player) Range() (fromNs, toNs int64) {
	to := p.endNs
	if to == 0 || to > p.lastNs && p.lastNs > p.startNs {
		to = p.lastNs
	}
	return p.startNs, to
}

// Progress returns what has been written so far and the message time of
// the last message written. Safe for concurrent use.
func (p *Player) Progress() (messages, bytes uint64, positionNs int64) {
	return p.nMsgs.Load(), p.nBytes.Load(), p.position.Load()
}

// Pause stops the replay before its next message until Resume or Step.
func (p *Player) Pause() {
	p.mu.Lock()
	p.paused = true
	p.pauseF.Store(true)
	p.mu.Unlock()
	p.signal()
}

// Resume continues a paused replay. The time spent paused is not made up:
// due times are shifted so the next message is due at once.
func (p *Player) Resume() {
	p.mu.Lock()
	p.paused = false
	p.steps = 0
	p.pauseF.Store(false)
	p.mu.Unlock()
	p.signal()
}

// Step pauses the replay (if it is not paused) and lets exactly one more
// message through, without waiting for its due time.
func (p *Player) Step() {
	p.mu.Lock()
	p.paused = true
	p.steps++
	p.pauseF.Store(true)
	p.mu.Unlock()
	p.signal()
}

func (p *Player) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Close closes the dumps when the Player opened them.
func (p *Player) Close() error {
	if !p.owned {
		return nil
	}
	var first error
	for _, s := range p.sources {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	p.sources = nil
	return first
}

func (p *Player) timerSleep(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-p.timer.C:
		return nil
	case <-ctx.Done():
		p.timer.Stop()
		return ctx.Err()
	case <-wake:
		p.timer.Stop()
		return errWoken
	}
}

var errWoken = errors.New("replay: woken")

// Run replays to out until the end of the range (every pass with Loop) or
// until ctx is cancelled, which is a clean stop: Run then returns the stats
// so far and ctx's error. out is opened at the start and closed at the end.
func (p *Player) Run(ctx context.Context, out Output) (Stats, error) {
	var st Stats
	if p.ran.Swap(true) {
		return st, errors.New("replay: Run called twice")
	}
	if err := out.Open(p.topics); err != nil {
		return st, err
	}
	h := &hist{}
	began := p.clk.Now()
	err := p.run(ctx, out, &st, h)
	st.Elapsed = time.Duration(p.clk.Now() - began)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	st.Samples = h.n
	st.TimingP50, st.TimingP99, st.TimingMax = h.quantile(0.5), h.quantile(0.99), time.Duration(h.max)
	return st, err
}

func (p *Player) run(ctx context.Context, out Output, st *Stats, h *hist) error {
	var m Message
	rate := p.opts.Rate
	first := true
	for {
		if err := p.msgs.SeekTime(p.startNs); err != nil {
			return err
		}
		clear(p.seq)
		st.Passes++
		// Due time of a message: base + (ts - baseTs) / rate.
		var base, baseTs int64
		rebase := true
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			ok, err := p.msgs.Next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			ts := p.msgs.Time()
			if p.endNs != 0 && ts > p.endNs {
				break
			}
			pm := p.msgs.Message()
			ti, known := p.index[topicKey{pm.Name, pm.Channel}]
			if !known || ti < 0 {
				continue
			}
			stepped := false
			for {
				if p.pauseF.Load() {
					s, err := p.waitPaused(ctx)
					if err != nil {
						return err
					}
					stepped = s
					rebase = true
				}
				if stepped || rate == 0 {
					break
				}
				if rebase {
					base, baseTs, rebase = p.clk.Now(), ts, false
				}
				due := base + int64(float64(ts-baseTs)/rate)
				err := p.waitUntil(ctx, due)
				if err == errWoken {
					continue // paused, or a spurious wake-up: check again
				}
				if err != nil {
					return err
				}
				h.add(p.clk.Now() - due)
				break
			}
			m = Message{Topic: &p.topics[ti], Seq: p.seq[ti], TimeNs: ts, GenNs: pm.GenNs, DoneNs: pm.DoneNs,
				Meta: pm.Meta, Data: pm.Data, Type: pm.Type}
			p.seq[ti]++
			if err := out.Write(&m); err != nil {
				if !errors.Is(err, ErrTooLarge) {
					return fmt.Errorf("replay: %s seq %d: %w", m.Topic, m.Seq, err)
				}
				st.Dropped++
			} else {
				st.Messages++
				st.Bytes += uint64(len(m.Data))
				p.nMsgs.Add(1)
				p.nBytes.Add(uint64(len(m.Data)))
			}
			if first {
				st.FirstNs, first = ts, false
			}
			st.LastNs = ts
			p.position.Store(ts)
		}
		if !p.opts.Loop || st.Messages+st.Dropped == 0 {
			return nil
		}
	}
}

// napMax is the longest wait the player does with nap (not interruptible
// by Pause or ctx); longer waits sleep on a Go timer until napMax before.
const napMax = 2 * time.Millisecond

// waitUntil waits until the clock reaches due: a Go timer (interruptible)
// until napMax before, then nap (precise) until Spin before, then polling.
// It returns errWoken when Pause, Resume or Step woke it.
func (p *Player) waitUntil(ctx context.Context, due int64) error {
	for {
		d := time.Duration(due - p.clk.Now())
		switch {
		case d <= 0:
			return nil
		case d > napMax:
			if err := p.sleep(ctx, d-napMax, p.wake); err != nil {
				return err
			}
		case d > p.spin:
			p.nap(d - max(p.spin, 0))
		default:
			if p.pauseF.Load() {
				return errWoken
			}
			runtime.Gosched()
		}
	}
}

// waitPaused blocks while the player is paused. It returns stepped = true
// when a Step let one message through.
func (p *Player) waitPaused(ctx context.Context) (stepped bool, err error) {
	for {
		p.mu.Lock()
		switch {
		case !p.paused:
			p.mu.Unlock()
			return false, nil
		case p.steps > 0:
			p.steps--
			p.mu.Unlock()
			return true, nil
		}
		p.mu.Unlock()
		select {
		case <-p.wake:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}
