package scripts

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
)

// LiveOptions configure a Live runner. Zero fields take the defaults.
type LiveOptions struct {
	// Poll is how long the rules' goroutine (or a moved rule's own) waits
	// when every rule on it is caught up. Default 5ms.
	Poll time.Duration
	// TopicPoll is how often new topics matching a rule are looked for.
	// Default 500ms.
	TopicPoll time.Duration
	// MaxLag: a rule whose newest delivered message is more than MaxLag
	// older than the recorder's clock skips to the newest messages, and
	// counts what it skipped. Default 2s.
	MaxLag time.Duration
	// Batch is how many messages a rule handles between looks at reload
	// and dump requests. Default 256.
	Batch int
	// ControlWait bounds how long Reload and DumpFinished wait for a
	// rule's goroutine: a rule stuck in a callback does not hold up the
	// caller (the control socket, the dump hooks); the call then fails
	// with ErrBusy (a reload) or is skipped and counted in the rule's
	// Errors (a dump notification). Default 2s.
	ControlWait time.Duration
	// Detach: the rules share one goroutine; a rule whose turn on it
	// (its callbacks on up to Batch messages, or one stuck callback) is
	// still running after between Detach and twice Detach is moved to a
	// goroutine of its own for good, so the other rules wait for a slow or
	// stuck rule at most about twice Detach. Default 50ms. A rule over
	// MaxLag/4 behind the recorder (the rules together need more than one
	// goroutine) is moved to its own too.
	Detach time.Duration
}

func (o LiveOptions) withDefaults() LiveOptions {
	if o.Poll <= 0 {
		o.Poll = 5 * time.Millisecond
	}
	if o.TopicPoll <= 0 {
		o.TopicPoll = 500 * time.Millisecond
	}
	if o.MaxLag <= 0 {
		o.MaxLag = 2 * time.Second
	}
	if o.Batch <= 0 {
		o.Batch = 256
	}
	if o.ControlWait <= 0 {
		o.ControlWait = 2 * time.Second
	}
	if o.Detach <= 0 {
		o.Detach = 50 * time.Millisecond
	}
	return o
}

// Live runs rules on a recorder, reading the rings of the topics each
// rule's globs match through the rule's own readers, from the newest
// message at start on, merged by capture time. Lua cost never reaches the
// ingest path: a rule that falls behind loses the messages the ring
// overwrote (counted as Skipped) and, past MaxLag, jumps to the newest
// messages (also counted). When no message arrives, ticks follow the
// recorder's clock.
//
// The rules take turns on one goroutine, which wakes every Poll while
// they are caught up: one timer for all rules, not one per rule. A rule
// whose turn is still running at two looks LiveOptions.Detach apart (a
// slow or stuck callback) gets a goroutine of its own, so it holds the
// others up once, for at most about twice Detach; so does a rule over
// MaxLag/4 behind the recorder.
//
// Live's methods are safe for concurrent use.
type Live struct {
	rec     *engine.Recorder
	opts    LiveOptions
	stop    chan struct{}
	wg      sync.WaitGroup
	runners []*runner
	once    sync.Once

	// mu guards every driver's runners, cur, turn and seen, and
	// every runner's owner and pending.
	mu sync.Mutex
}

// driver is a goroutine running its runners' turns in order.
type driver struct {
	live    *Live
	wake    chan struct{} // a control request is pending (capacity 1)
	runners []*runner
	cur     *runner // the runner whose turn it is, nil between rounds
	turn    uint64  // counts turns
	seen    uint64  // turn at the watchdog's last look (0: none yet)
	watch   *time.Timer
}

// ctlRequest is a function to run on a runner's driver between turns.
type ctlRequest struct {
	f     func()
	taken bool // the driver took it (under Live.mu)
	done  chan struct{}
}

// runner is one rule's state; its driver's goroutine is the only one
// touching its readers and its rule's callbacks.
type runner struct {
	live *Live

	owner   *driver       // under Live.mu
	pending []*ctlRequest // under Live.mu

	mu   sync.Mutex // guards rule against Status and Reload
	rule *Rule

	exited atomic.Bool // its driver returned (CloseWithin may release the rule)

	readers []*topicReader
	known   map[ingest.TopicID]bool
	// primed: the rule's first topic poll (since it started or was
	// reloaded) is done; a topic new after it is read from its first
	// message (discover).
	primed   bool
	msg      Message // reused for every delivery
	lastTS   int64
	lastPoll time.Time
	// lagging: the last drain found the rule over MaxLag/4 behind the
	// recorder; a rule sharing its goroutine then gets one of its own
	lagging bool
}

// topicReader is one topic's cursor for one rule.
type topicReader struct {
	rd       *engine.Reader
	name     string
	m        engine.Message // the next message's header (ReadHeader)
	n        int            // its payload's length
	has      bool           // m holds the next message, not yet delivered
	next     uint64         // Seq expected next
	lost     uint64         // rd.Lost() already counted
	skipFrom uint64         // after a skip: Seq the skip started at
	skipped  bool
	// typ is the topic's type as of the last topic poll (Message.Type: a
	// new pointer when it changes); changes is TopicStatus.TypeChanges then
	typ     *ingest.Type
	changes int
}

// StartLive starts the rules over rec, all on one goroutine (see Live).
// It takes ownership of the rules: Close closes them.
func StartLive(rec *engine.Recorder, rules []*Rule, opts LiveOptions) (*Live, error) {
	seen := map[string]string{}
	for _, r := range rules {
		if f, ok := seen[r.decl.Name]; ok {
			return nil, fmt.Errorf("%w: %s: rule %q already loaded from %s", ErrDeclaration, r.file, r.decl.Name, f)
		}
		seen[r.decl.Name] = r.file
	}
	l := &Live{rec: rec, opts: opts.withDefaults(), stop: make(chan struct{})}
	for _, r := range rules {
		ru := &runner{live: l, rule: r, known: map[ingest.TopicID]bool{}}
		l.runners = append(l.runners, ru)
	}
	if len(l.runners) > 0 {
		l.mu.Lock()
		l.startDriver(append([]*runner(nil), l.runners...))
		l.mu.Unlock()
	}
	return l, nil
}

// startDriver starts a goroutine taking turns over runners. Under l.mu.
func (l *Live) startDriver(runners []*runner) {
	dr := &driver{live: l, wake: make(chan struct{}, 1), runners: runners}
	for _, ru := range runners {
		ru.owner = dr
	}
	if len(runners) > 1 {
		dr.watch = time.AfterFunc(time.Hour, dr.look)
		dr.watch.Stop()
	}
	l.wg.Add(1)
	go dr.run()
}

// Status returns every rule's counters, including Skipped, LagNs and, for
// a rule inside a callback, CallNs and Stuck.
func (l *Live) Status() []RuleStatus {
	out := make([]RuleStatus, len(l.runners))
	for i, ru := range l.runners {
		ru.mu.Lock()
		out[i] = ru.rule.Status()
		ru.mu.Unlock()
	}
	return out
}

// Decl returns the declaration of the i-th rule (Status order), as
// currently loaded (a reload may change it).
func (l *Live) Decl(i int) Decl {
	ru := l.runners[i]
	ru.mu.Lock()
	defer ru.mu.Unlock()
	return ru.rule.Decl()
}

// Reload reloads the named rule from its file on the rule's goroutine; see
// Host.Reload.
func (l *Live) Reload(name string) error {
	ru := l.find(name)
	if ru == nil {
		return fmt.Errorf("%w: %q", ErrNoRule, name)
	}
	ru.mu.Lock()
	r := ru.rule
	ru.mu.Unlock()
	src, err := readRule(r)
	if err != nil {
		return err
	}
	return l.ReloadSource(name, src)
}

// ReloadSource replaces the named rule by src; see Host.ReloadSource.
func (l *Live) ReloadSource(name, src string) error {
	ru := l.find(name)
	if ru == nil {
		return fmt.Errorf("%w: %q", ErrNoRule, name)
	}
	var others []*Rule
	for _, o := range l.runners {
		o.mu.Lock()
		others = append(others, o.rule)
		o.mu.Unlock()
	}
	var err error
	ok := ru.do(func() {
		var nr *Rule
		nr, err = reload(ru.rule, src, others)
		if err != nil {
			return
		}
		ru.mu.Lock()
		old := ru.rule
		ru.rule = nr
		ru.mu.Unlock()
		old.Close()
		// the new version may watch other topics
		kept := ru.readers[:0]
		for _, tr := range ru.readers {
			if nr.Matches(tr.name) {
				kept = append(kept, tr)
			} else {
				tr.rd.Close()
			}
		}
		ru.readers = kept
		ru.known = map[ingest.TopicID]bool{}
		for _, tr := range kept {
			ru.known[tr.rd.Topic()] = true
		}
		ru.lastPoll, ru.primed = time.Time{}, false
	})
	switch ok {
	case doStopped:
		return fmt.Errorf("scripts: reload %s: %w", name, errLiveClosed)
	case doTimedOut:
		return fmt.Errorf("scripts: reload %s: %w (in a callback for over %v; the running version stays)", name, ErrBusy, l.opts.ControlWait)
	}
	return err
}

var errLiveClosed = fmt.Errorf("live runner closed")

// DumpFinished calls on_dump_finished on every rule, on its goroutine,
// and returns when all have run, or after LiveOptions.ControlWait for a rule stuck in
// a callback (that rule misses the notification; counted in its Errors
// and logged).
func (l *Live) DumpFinished(d DumpResult) {
	for _, ru := range l.runners {
		if ru.do(func() { ru.rule.DumpFinished(d) }) == doTimedOut {
			ru.mu.Lock()
			r := ru.rule
			ru.mu.Unlock()
			r.st.errors.Add(1)
			r.logger.Error("rule busy: on_dump_finished not delivered", "rule", r.decl.Name, "file", r.file, "path", d.Path)
		}
	}
}

// Close stops the goroutines and closes the readers and the rules; it
// waits for a rule stuck in a callback (see CloseWithin).
func (l *Live) Close() error {
	l.CloseWithin(-1)
	return nil
}

// CloseWithin stops the goroutines and waits at most d (forever when d < 0)
// for them, then closes the readers and rules of those that stopped. A
// callback running Lua is stopped within 256 instructions; a rule still
// inside a callback after d (stuck in a Go library function) is abandoned: a goroutine cannot be killed,
// so its Lua state and readers are left to it (released when the process
// exits) and CloseWithin reports false and logs it. The recorder can then
// stop within its deadline whatever a rule does.
func (l *Live) CloseWithin(d time.Duration) bool {
	all := true
	l.once.Do(func() {
		close(l.stop)
		for _, ru := range l.runners {
			ru.mu.Lock()
			ru.rule.abort() // a rule looping in Lua stops at once
			ru.mu.Unlock()
		}
		done := make(chan struct{})
		go func() { l.wg.Wait(); close(done) }()
		if d >= 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-done:
			case <-t.C:
			}
		} else {
			<-done
		}
		for _, ru := range l.runners {
			if !ru.exited.Load() {
				all = false
				ru.mu.Lock()
				r := ru.rule
				ru.mu.Unlock()
				st := r.Status()
				l.mu.Lock()
				inTurn := ru.owner.cur == ru
				l.mu.Unlock()
				if !inTurn { // waiting for its turn behind a stuck rule not yet moved off
					r.logger.Error("rule waiting behind a rule stuck in a callback at stop; abandoned", "rule", r.decl.Name, "file", r.file)
					continue
				}
				r.logger.Error("rule stuck in a callback at stop; abandoned", "rule", r.decl.Name, "file", r.file,
					"in_call", time.Duration(st.CallNs).Round(time.Millisecond))
				continue
			}
			for _, tr := range ru.readers {
				tr.rd.Close()
			}
			ru.rule.Close()
		}
	})
	return all
}

func (l *Live) find(name string) *runner {
	for _, ru := range l.runners {
		ru.mu.Lock()
		n := ru.rule.decl.Name
		ru.mu.Unlock()
		if n == name {
			return ru
		}
	}
	return nil
}

// Outcomes of runner.do.
const (
	doDone = iota
	doStopped
	doTimedOut
)

// do runs f on the runner's goroutine between its turns and waits, at
// most ControlWait for the goroutine to take it and for f to finish.
// After a time-out f may still run later if the goroutine took it; one
// not taken is withdrawn.
func (ru *runner) do(f func()) int {
	l := ru.live
	req := &ctlRequest{f: f, done: make(chan struct{})}
	l.mu.Lock()
	select {
	case <-l.stop:
		l.mu.Unlock()
		return doStopped
	default:
	}
	ru.pending = append(ru.pending, req)
	dr := ru.owner
	l.mu.Unlock()
	select {
	case dr.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
	t := time.NewTimer(l.opts.ControlWait)
	defer t.Stop()
	select {
	case <-req.done:
		return doDone
	case <-l.stop:
		if ru.withdraw(req) {
			return doStopped
		}
		select {
		case <-req.done:
			return doDone
		case <-t.C:
			return doTimedOut
		}
	case <-t.C:
		if ru.withdraw(req) {
			return doTimedOut
		}
		select {
		case <-req.done:
			return doDone
		default:
			return doTimedOut
		}
	}
}

// withdraw takes req off the runner's queue unless its driver took it
// already; it reports whether it did.
func (ru *runner) withdraw(req *ctlRequest) bool {
	l := ru.live
	l.mu.Lock()
	defer l.mu.Unlock()
	if req.taken {
		return false
	}
	for i, q := range ru.pending {
		if q == req {
			ru.pending = append(ru.pending[:i], ru.pending[i+1:]...)
			break
		}
	}
	return true
}

func (dr *driver) run() {
	l := dr.live
	defer l.wg.Done()
	defer dr.exit()
	idle := time.NewTimer(l.opts.Poll)
	defer idle.Stop()
	for {
		busy, stopped := dr.round()
		if stopped {
			return
		}
		if busy {
			continue
		}
		// all caught up (and time passed in each rule): wait
		idle.Reset(l.opts.Poll)
		select {
		case <-l.stop:
			return
		case <-dr.wake:
		case <-idle.C:
		}
	}
}

// exit marks the driver's runners as stopped (CloseWithin releases them).
func (dr *driver) exit() {
	l := dr.live
	l.mu.Lock()
	defer l.mu.Unlock()
	if dr.watch != nil {
		dr.watch.Stop()
	}
	dr.cur = nil
	for _, ru := range dr.runners {
		ru.exited.Store(true)
	}
}

// round gives each of the driver's runners a turn: its control requests,
// a topic poll when due, up to Batch messages, and when it has none left
// the ticks due up to the recorder's clock less Poll. busy: some runner
// delivered messages (it may have more).
func (dr *driver) round() (busy, stopped bool) {
	l := dr.live
	now := time.Now()
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return busy, true
		default:
		}
		l.mu.Lock()
		if i >= len(dr.runners) {
			dr.cur = nil
			l.mu.Unlock()
			break
		}
		ru := dr.runners[i]
		dr.cur = ru
		dr.turn++
		if i == 0 && dr.watch != nil && len(dr.runners) > 1 {
			dr.seen = 0
			dr.watch.Reset(l.opts.Detach)
		}
		reqs := ru.pending
		ru.pending = nil
		for _, q := range reqs {
			q.taken = true
		}
		l.mu.Unlock()
		for _, q := range reqs {
			q.f()
			close(q.done)
		}
		if now.Sub(ru.lastPoll) >= l.opts.TopicPoll {
			ru.discover()
		}
		if ru.drain(l.opts.Batch) > 0 {
			busy = true
		} else {
			ru.rule.Tick(l.rec.Now() - int64(l.opts.Poll))
		}
		if ru.lagging {
			ru.lagging = false
			l.mu.Lock()
			if len(dr.runners) > 1 && dr.runners[i] == ru {
				// the rules together need more than this goroutine
				dr.runners = append(dr.runners[:i:i], dr.runners[i+1:]...)
				l.startDriver([]*runner{ru})
				i--
				l.mu.Unlock()
				ru.logMoved("it lags over " + (l.opts.MaxLag / 4).String() + " behind the recorder")
				continue
			}
			l.mu.Unlock()
		}
	}
	if dr.watch != nil {
		dr.watch.Stop()
	}
	return busy, false
}

// look is the driver's watchdog, armed while a round runs on a driver
// of several runners: a turn still running at two looks Detach apart
// moves its runner to a goroutine of its own (this driver keeps it: it is
// inside its callback) and the other runners to a new driver.
func (dr *driver) look() {
	l := dr.live
	l.mu.Lock()
	defer l.mu.Unlock()
	if dr.cur == nil || len(dr.runners) < 2 {
		return
	}
	if dr.turn != dr.seen {
		dr.seen = dr.turn
		dr.watch.Reset(l.opts.Detach)
		return
	}
	slow := dr.cur
	var rest []*runner
	for _, ru := range dr.runners {
		if ru != slow {
			rest = append(rest, ru)
		}
	}
	dr.runners = []*runner{slow}
	l.startDriver(rest)
	slow.logMoved("one turn of its callbacks took over " + l.opts.Detach.String())
}

// logMoved logs that the runner got a goroutine of its own, and why.
func (ru *runner) logMoved(why string) {
	ru.mu.Lock()
	r := ru.rule
	ru.mu.Unlock()
	r.logger.Warn("rule slow: "+why+"; moved to a goroutine of its own", "rule", r.decl.Name, "file", r.file)
}

// discover opens readers for new matching topics. The topics there at
// the rule's first poll (since it started or was reloaded) are read from
// their newest message on: a rule never sees what was recorded before it
// ran. A topic that appears later was created while the rule ran, so its
// ring holds nothing from before: it is read from its oldest message, and
// the rule sees its first messages (a DBC message's topic is created at
// its first frame), up to TopicPoll behind the messages of its other
// topics it already had.
func (ru *runner) discover() {
	ru.lastPoll = time.Now()
	fromNewest := !ru.primed
	ru.primed = true
	for _, ts := range ru.live.rec.Topics() {
		if ru.known[ts.ID] {
			// a producer restarted with another type: rules see it from
			// this poll on (within TopicPoll of the change)
			for _, tr := range ru.readers {
				if tr.rd.Topic() == ts.ID && tr.changes != ts.TypeChanges {
					typ := ts.Info.Type
					tr.typ, tr.changes = &typ, ts.TypeChanges
				}
			}
			continue
		}
		ru.known[ts.ID] = true
		if !ru.rule.Matches(ts.Info.Name) {
			continue
		}
		rd, err := ru.live.rec.NewReader(ts.ID)
		if err != nil {
			ru.rule.logger.Warn("rule cannot read topic", "rule", ru.rule.decl.Name, "topic", ts.Info.Name, "err", err)
			continue
		}
		if fromNewest {
			rd.SeekNewest()
		} // else at the oldest message held (NewReader)
		typ := ts.Info.Type
		ru.readers = append(ru.readers, &topicReader{rd: rd, name: ts.Info.Name, next: ^uint64(0), typ: &typ, changes: ts.TypeChanges})
	}
}

// drain delivers up to n messages, oldest capture time first across the
// rule's topics, and returns how many it delivered.
func (ru *runner) drain(n int) int {
	r := ru.rule
	i := 0
	for ; i < n; i++ {
		var best *topicReader
		for _, tr := range ru.readers {
			if !tr.has {
				// the header only: the payload stays in the ring until
				// the rule reads it (Rule.data)
				if tr.n, tr.has = tr.rd.ReadHeader(&tr.m); tr.has && tr.skipped {
					r.st.skipped.Add(tr.m.Seq - tr.skipFrom)
					tr.skipped = false
				}
			}
			if tr.has && (best == nil || tr.m.CaptureNs < best.m.CaptureNs) {
				best = tr
			}
		}
		if best == nil {
			break
		}
		m := &ru.msg
		m.Topic, m.TS, m.GenTS, m.Seq, m.Type = best.name, best.m.CaptureNs, best.m.GenNs, best.m.Seq, best.typ
		m.Data, m.lazy, m.size = m.Data[:0], best.rd, best.n // m.Data: the runner's buffer
		r.Feed(m)
		m.lazy = nil
		best.has, best.next = false, best.m.Seq+1
		ru.lastTS = m.TS
	}
	for _, tr := range ru.readers {
		if lost := tr.rd.Lost(); lost != tr.lost {
			r.st.skipped.Add(lost - tr.lost)
			tr.lost = lost
		}
	}
	if i > 0 {
		lag := ru.live.rec.Now() - ru.lastTS
		r.st.lag.Store(lag)
		ru.lagging = lag > int64(ru.live.opts.MaxLag)/4
		if lag > int64(ru.live.opts.MaxLag) {
			ru.skipToNewest()
		}
	}
	return i
}

// skipToNewest moves every reader past the newest message. What lay
// between is counted now up to the messages written before the seek, and
// the rest when the next message shows its Seq.
func (ru *runner) skipToNewest() {
	written := map[ingest.TopicID]uint64{}
	for _, ts := range ru.live.rec.Topics() {
		written[ts.ID] = ts.Counters.Written
	}
	for _, tr := range ru.readers {
		from := tr.next
		if tr.has {
			from, tr.has = tr.m.Seq, false
		}
		tr.rd.SeekNewest()
		if from == ^uint64(0) {
			continue
		}
		if w := written[tr.rd.Topic()]; w > from {
			ru.rule.st.skipped.Add(w - from)
			from = w
		}
		tr.skipFrom, tr.skipped = from, true
	}
	ru.lastTS = ru.live.rec.Now()
	ru.rule.st.lag.Store(0)
}
