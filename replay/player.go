package replay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// Options configure a Player. The zero value replays every topic of the
// dumps once, as fast as possible.
type Options struct {
	// Topics are globs (path.Match syntax) over "name#channel" and over the
	// name alone; a topic is replayed when it matches one (empty means
	// all) and no Exclude glob (internal/filter.Topics).
	Topics, Exclude []string
	// FromNs skips the messages before this message time (UNIX ns; 0 = no
	// limit). With Start as well, the later start wins.
	FromNs int64
	// Remap renames topics on the way out (rosbag2's --remap): a key is a
	// recorded "name" or "name#channel", its value the name the outputs
	// see (the channel is kept). Topics and Exclude select by the recorded
	// names; outputs, Player.Topics and the UDP port order use the new
	// ones. A key that names no topic of the dumps, or two topics ending
	// up with one name, is an error.
	Remap map[string]string
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
	// context is cancelled or Passes passes have been played.
	Loop bool
	// Passes bounds the passes of a Loop (0 = until the context is
	// cancelled). Without Loop there is one pass.
	Passes int
	// Delay waits this long (wall clock) before each pass (rosbag2's
	// --delay). Pause, Step and the context interrupt it.
	Delay time.Duration
	// StartPaused makes Run start paused: nothing is written until Resume
	// or Step (rosbag2's --start-paused).
	StartPaused bool
	// ClockHz, when positive, adds a clock topic (rosbag2's --clock): every
	// 1/ClockHz of message time from the start of a pass, a message on
	// ClockTopic whose payload is that message time as an i64le count of
	// nanoseconds since the UNIX epoch (layout "i64le t (ns)", producer
	// time the same), written before the first recorded message at or
	// after it. It is timed, paused and stepped with the messages around
	// it, sorts after every recorded topic (its index is the last, so UDP
	// ports of recorded topics do not move) and is counted in
	// Stats.ClockTicks, not in Stats.Messages.
	ClockHz float64
	// ClockTopic names the clock topic (DefaultClockTopic when "").
	ClockTopic string
	// Turn, when set, makes the player one of several an Orchestrator
	// coordinates: each message waits for its turn (TurnToken.Wait) and
	// the orchestrator paces the shared timeline, so Rate must be 0 and
	// Loop, Delay, StartPaused, ClockHz, Pause and Step do not apply.
	// Run leaves the orchestrator when it returns.
	Turn *TurnToken
	// Spin, when positive, is how long before a due time the player stops
	// sleeping and polls the clock (yielding between polls): better timing
	// on an idle machine for a busy core, worse when the CPU is contended
	// (see BenchmarkTimingError). 0 sleeps only: on a Go timer until 2ms
	// before, then in clock_nanosleep (Linux), whose precision is the
	// kernel's timer slack rather than the millisecond of Go's timers.
	Spin time.Duration
}

// DefaultClockTopic is the clock topic's name when Options.ClockTopic is
// empty; ClockType is its type.
const (
	DefaultClockTopic = "clock"
	ClockType         = "edr.Clock(i64le ns)"
)

// Topic is one topic a Player replays. Index is its position in
// Player.Topics (sorted by String), which Message.Topic points into.
type Topic struct {
	Index         int
	Name, Channel string
	// Recorded is the name in the dumps when Options.Remap renamed the
	// topic ("" when it did not).
	Recorded string
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
	// ClockTicks counts the clock topic's messages (Options.ClockHz).
	ClockTicks uint64
	Elapsed    time.Duration
	FirstNs    int64 // message time of the first message replayed
	LastNs     int64 // message time of the last message replayed
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
	// clock topic (Options.ClockHz): its index in topics, the message-time
	// step between ticks, the next tick, the tick's payload
	clockIdx  int
	clockStep int64
	nextTick  int64
	clockBuf  [8]byte
	tickMsg   Message
	firstNs   int64 // earliest message of the dumps
	startNs   int64
	endNs     int64 // inclusive; 0 = none
	lastNs    int64 // latest message time of the last frames (for progress)

	clk   clock.Clock
	sleep func(ctx context.Context, d time.Duration, wake <-chan struct{}) error // tests
	// hold, when set (a closed loop in lockstep), is called before each
	// message with its topic index and may wait; when it waited and the
	// message is then late, the timing restarts at it (the wait is not
	// made up)
	hold  func(ctx context.Context, ti int, ts, gen int64) (waited bool, err error)
	nap   func(d time.Duration) // tests
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
	// batch is how many messages write counts before it publishes the
	// progress (1 when timed, in a closed loop or with an orchestrator; 64
	// as fast as possible, where Progress is read by a progress bar);
	// unpublished counts how many it has not.
	batch, unpublished int
	st                 *Stats // of the running Run
	lastWritten        int64  // message time of the last message written
	recent             topicCache
}

// topicCache remembers the topic index of the last few recorded topics
// (name, channel): a map lookup hashes both strings for every message,
// while the topics of a stretch of messages are few (the pack reader
// interns names, so equal strings mostly share their bytes).
type topicCache struct {
	n int
	e [8]struct {
		name, channel string
		ti            int
		known         bool
	}
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
	if err := opts.check(); err != nil {
		return nil, err
	}
	sel, err := filter.ParseTopics(strings.Join(opts.Topics, ","), strings.Join(opts.Exclude, ","))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOptions, err)
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
		if !sel.MatchName(t.Name, t.Channel) {
			p.index[k] = -1
			continue
		}
		p.topics = append(p.topics, t)
	}
	if err := remapTopics(p.topics, counts, opts.Remap); err != nil {
		return nil, err
	}
	sort.Slice(p.topics, func(i, j int) bool { return p.topics[i].String() < p.topics[j].String() })
	for i := range p.topics {
		p.topics[i].Index = i
		p.index[p.topics[i].recordedKey()] = i
	}
	p.seq = make([]uint64, len(p.topics))
	if opts.ClockHz > 0 {
		name := opts.ClockTopic
		if name == "" {
			name = DefaultClockTopic
		}
		for i := range p.topics {
			if p.topics[i].Name == name && p.topics[i].Channel == "" {
				return nil, fmt.Errorf("%w: clock topic %q is also a topic of the dumps (name it with ClockTopic)", ErrOptions, name)
			}
		}
		p.clockIdx = len(p.topics)
		p.topics = append(p.topics, Topic{Index: p.clockIdx, Name: name, Type: ingest.Named(ClockType)})
		p.clockStep = max(int64(float64(time.Second)/opts.ClockHz), 1)
	}
	p.msgs = dumpfile.NewMessages(sources...)
	ok, err := p.msgs.Next()
	if err != nil {
		return nil, err
	}
	if ok {
		p.firstNs = p.msgs.Time()
	}
	p.startNs = max(p.firstNs+int64(opts.Start), opts.FromNs)
	if opts.Duration > 0 {
		p.endNs = p.startNs + int64(opts.Duration)
	}
	if opts.UntilNs != 0 && (p.endNs == 0 || opts.UntilNs < p.endNs) {
		p.endNs = opts.UntilNs
	}
	return p, nil
}

// check validates the options that do not depend on the dumps.
func (o *Options) check() error {
	switch {
	case o.Rate < 0:
		return fmt.Errorf("%w: rate %v is negative", ErrOptions, o.Rate)
	case o.Start < 0 || o.Duration < 0:
		return fmt.Errorf("%w: start and duration must not be negative", ErrOptions)
	case o.Delay < 0:
		return fmt.Errorf("%w: delay %v is negative", ErrOptions, o.Delay)
	case o.Passes < 0:
		return fmt.Errorf("%w: passes %d is negative", ErrOptions, o.Passes)
	case o.ClockHz < 0 || math.IsNaN(o.ClockHz) || math.IsInf(o.ClockHz, 0):
		return fmt.Errorf("%w: clock rate %v Hz: want a positive number", ErrOptions, o.ClockHz)
	case o.ClockHz > 1e6:
		return fmt.Errorf("%w: clock rate %v Hz is more than 1 MHz", ErrOptions, o.ClockHz)
	}
	if o.Turn != nil && (o.Rate != 0 || o.Loop || o.Delay != 0 || o.StartPaused || o.ClockHz != 0) {
		return fmt.Errorf("%w: a player with a turn is paced by its orchestrator: no rate, loop, delay, start paused or clock of its own", ErrOptions)
	}
	return nil
}

// recordedKey is the topic's key in the dumps (before Remap).
func (t *Topic) recordedKey() topicKey {
	if t.Recorded != "" {
		return topicKey{t.Recorded, t.Channel}
	}
	return topicKey{t.Name, t.Channel}
}

// remapTopics renames the selected topics by remap (keys "name" or
// "name#channel" of the dumps). A key that names no topic of the dumps
// (all holds every one) and two topics ending up with one name are errors.
func remapTopics(topics []Topic, all map[topicKey]uint64, remap map[string]string) error {
	if len(remap) == 0 {
		return nil
	}
	keys := make([]string, 0, len(remap))
	for k, v := range remap {
		if k == "" || v == "" {
			return fmt.Errorf("%w: remap %q=%q: want OLD=NEW, both non-empty", ErrOptions, k, v)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		found := false
		for key := range all {
			if key.name == k || pack.Topic(key.name, key.channel) == k {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%w: remap %s: the dumps hold no such topic (they hold %s)", ErrOptions, k, topicList(all))
		}
	}
	seen := map[topicKey]string{}
	for i := range topics {
		t := &topics[i]
		to, ok := remap[pack.Topic(t.Name, t.Channel)]
		if !ok {
			to, ok = remap[t.Name]
		}
		if ok && to != t.Name {
			t.Recorded, t.Name = t.Name, to
		}
	}
	for i := range topics {
		t := &topics[i]
		k := topicKey{t.Name, t.Channel}
		if prev, dup := seen[k]; dup {
			return fmt.Errorf("%w: remap: %s and %s would both be replayed as %s", ErrOptions, prev, t.recordedString(), t)
		}
		seen[k] = t.recordedString()
	}
	return nil
}

// recordedString is the topic as the dumps name it.
func (t *Topic) recordedString() string {
	k := t.recordedKey()
	return mcap.TopicName(k.name, k.channel)
}

// topicList names the topics of all, sorted, for error messages (at most
// 20).
func topicList(all map[topicKey]uint64) string {
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, mcap.TopicName(k.name, k.channel))
	}
	sort.Strings(names)
	if len(names) > 20 {
		names = append(names[:20], fmt.Sprintf("and %d more", len(names)-20))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
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

// Paused reports whether the player is paused (Pause, Step or
// Options.StartPaused, and no Resume since).
func (p *Player) Paused() bool { return p.pauseF.Load() }

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
	if p.opts.Turn != nil {
		defer p.opts.Turn.Leave()
	}
	if p.opts.StartPaused {
		p.Pause()
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

// pass is the timing state of one pass: a message is due at
// base + (ts - baseTs) / rate; rebase sets base to now at the next message.
type pass struct {
	base, baseTs int64
	rebase       bool
}

func (p *Player) run(ctx context.Context, out Output, st *Stats, h *hist) error {
	var m Message
	first := true
	p.batch = 1
	if p.opts.Rate == 0 && p.opts.Turn == nil && p.hold == nil {
		p.batch = 64
	}
	p.st = st
	defer p.publish()
	for {
		if err := p.msgs.SeekTime(p.startNs); err != nil {
			return err
		}
		clear(p.seq)
		st.Passes++
		if err := p.delay(ctx); err != nil {
			return err
		}
		ps := pass{rebase: true}
		p.nextTick = p.startNs
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
			ti, known := p.topicIndex(pm.Name, pm.Channel)
			if !known || ti < 0 {
				continue
			}
			if turn := p.opts.Turn; turn != nil {
				// the orchestrator orders and paces: wait for the turn,
				// write, end the turn
				if err := turn.Wait(ctx, ts); err != nil {
					return err
				}
				waited := false
				if p.hold != nil {
					if waited, err = p.hold(ctx, ti, ts, pm.GenNs); err != nil {
						turn.Done()
						return err
					}
				}
				m = Message{Topic: &p.topics[ti], Seq: p.seq[ti], TimeNs: ts, GenNs: pm.GenNs, DoneNs: pm.DoneNs, Meta: pm.Meta, Data: pm.Data}
				p.seq[ti]++
				err := p.write(out, &m, st)
				if waited {
					turn.Restart()
				}
				turn.Done()
				if err != nil {
					return err
				}
				if first {
					st.FirstNs, first = ts, false
				}
				st.LastNs = ts
				continue
			}
			if p.hold != nil {
				waited, err := p.hold(ctx, ti, ts, pm.GenNs)
				if err != nil {
					return err
				}
				if waited && p.opts.Rate > 0 && !ps.rebase && p.clk.Now() > ps.due(ts, p.opts.Rate) {
					ps.rebase = true
				}
			}
			for p.clockStep > 0 && p.nextTick <= ts {
				if err := p.tick(ctx, out, st, &ps); err != nil {
					return err
				}
			}
			stepped := false
			if p.opts.Rate != 0 || p.pauseF.Load() { // else gate lets it through
				if stepped, err = p.gate(ctx, ts, &ps, false); err != nil {
					return err
				}
			}
			if !stepped && p.opts.Rate > 0 {
				h.add(p.clk.Now() - ps.due(ts, p.opts.Rate))
			}
			// field by field: no temporary Message copied over m
			m.Topic, m.Seq, m.TimeNs, m.GenNs, m.DoneNs = &p.topics[ti], p.seq[ti], ts, pm.GenNs, pm.DoneNs
			m.Meta, m.Data, m.Type = pm.Meta, pm.Data, pm.Type
			p.seq[ti]++
			if err := p.write(out, &m, st); err != nil {
				return err
			}
			if first {
				st.FirstNs, first = ts, false
			}
			st.LastNs = ts
		}
		if !p.opts.Loop || st.Messages+st.Dropped == 0 || (p.opts.Passes > 0 && st.Passes >= p.opts.Passes) {
			return nil
		}
	}
}

// write hands m to out and counts it (a message too large for the output
// is dropped and counted; any other error stops the replay).
func (p *Player) write(out Output, m *Message, st *Stats) error {
	if err := out.Write(m); err != nil {
		if !errors.Is(err, ErrTooLarge) {
			return fmt.Errorf("replay: %s seq %d: %w", m.Topic, m.Seq, err)
		}
		st.Dropped++
	} else {
		st.Messages++
		st.Bytes += uint64(len(m.Data))
	}
	p.lastWritten = m.TimeNs
	if p.unpublished++; p.unpublished >= p.batch {
		p.publish()
	}
	return nil
}

// publish makes what has been written visible to Progress.
func (p *Player) publish() {
	p.unpublished = 0
	p.nMsgs.Store(p.st.Messages)
	p.nBytes.Store(p.st.Bytes)
	if p.lastWritten != 0 {
		p.position.Store(p.lastWritten)
	}
}

// topicIndex returns the index in p.topics of recorded topic name#channel
// (-1 when it is not replayed) and whether the dumps have it.
func (p *Player) topicIndex(name, channel string) (int, bool) {
	c := &p.recent
	for i := 0; i < c.n; i++ { // interned: the same strings
		if e := &c.e[i]; sameString(e.name, name) && sameString(e.channel, channel) {
			return e.ti, e.known
		}
	}
	for i := 0; i < c.n; i++ {
		if e := &c.e[i]; e.name == name && e.channel == channel {
			// Another frame's copy (read-ahead decodes into frames of
			// their own): keep this one, so the next messages of this
			// frame match by address.
			e.name, e.channel = name, channel
			return e.ti, e.known
		}
	}
	ti, known := p.index[topicKey{name, channel}]
	if c.n < len(c.e) {
		c.e[c.n].name, c.e[c.n].channel, c.e[c.n].ti, c.e[c.n].known = name, channel, ti, known
		c.n++
	}
	return ti, known
}

func (ps *pass) due(ts int64, rate float64) int64 { return ps.base + int64(float64(ts-ps.baseTs)/rate) }

// gate waits until the message (or clock tick) at ts may be written: while
// paused, until a Step lets it through (stepped) or Resume; in timed
// modes, until its due time. A clock tick does not use up a Step: while
// stepping, the ticks before the stepped message go with it.
func (p *Player) gate(ctx context.Context, ts int64, ps *pass, tick bool) (stepped bool, err error) {
	for {
		if p.pauseF.Load() {
			if stepped, err = p.waitPaused(ctx, tick); err != nil {
				return false, err
			}
			ps.rebase = true
		}
		if stepped || p.opts.Rate == 0 {
			return stepped, nil
		}
		if ps.rebase {
			ps.base, ps.baseTs, ps.rebase = p.clk.Now(), ts, false
		}
		err := p.waitUntil(ctx, ps.due(ts, p.opts.Rate))
		if err == errWoken {
			continue // paused, or a spurious wake-up: check again
		}
		return false, err
	}
}

// tick writes the clock topic's message due at p.nextTick and schedules
// the next one.
func (p *Player) tick(ctx context.Context, out Output, st *Stats, ps *pass) error {
	ts := p.nextTick
	p.nextTick += p.clockStep
	if _, err := p.gate(ctx, ts, ps, true); err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(p.clockBuf[:], uint64(ts))
	m := &p.tickMsg // a field: a local would escape through Write, one allocation per tick
	*m = Message{Topic: &p.topics[p.clockIdx], Seq: st.ClockTicks, TimeNs: ts, GenNs: ts, DoneNs: ts, Data: p.clockBuf[:]}
	if err := out.Write(m); err != nil {
		return fmt.Errorf("replay: clock topic %s at %d: %w", m.Topic, ts, err)
	}
	st.ClockTicks++
	return nil
}

// delay waits Options.Delay before a pass (interrupted by ctx; a Pause
// during the delay holds the pass until Resume or Step).
func (p *Player) delay(ctx context.Context) error {
	d := p.opts.Delay
	if d <= 0 {
		return nil
	}
	end := p.clk.Now() + int64(d)
	for {
		left := time.Duration(end - p.clk.Now())
		if left <= 0 {
			return nil
		}
		if err := p.sleep(ctx, left, p.wake); err != nil && err != errWoken {
			return err
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
// when a Step lets one message through; for a clock tick (peek) a pending
// Step lets it through without being used up.
func (p *Player) waitPaused(ctx context.Context, peek bool) (stepped bool, err error) {
	p.publish()
	for {
		p.mu.Lock()
		switch {
		case !p.paused:
			p.mu.Unlock()
			return false, nil
		case p.steps > 0:
			if !peek {
				p.steps--
			}
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
