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
	// Poll is how long a rule's goroutine waits when all its readers are
	// caught up. Default 5ms.
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
	return o
}

// Live runs rules on a recorder: each rule on its own goroutine, reading
// the rings of the topics its globs match through its own readers, from
// the newest message at start on, merged by capture time. Lua cost never
// reaches the ingest path: a rule that falls behind loses the messages the
// ring overwrote (counted as Skipped) and, past MaxLag, jumps to the newest
// messages (also counted). When no message arrives, ticks follow the
// recorder's clock.
//
// Live's methods are safe for concurrent use.
type Live struct {
	rec     *engine.Recorder
	opts    LiveOptions
	stop    chan struct{}
	wg      sync.WaitGroup
	runners []*runner
	once    sync.Once
}

// runner is one rule's goroutine state.
type runner struct {
	live *Live
	ctl  chan func()

	mu   sync.Mutex // guards rule against Status and Reload
	rule *Rule

	exited atomic.Bool // run returned (CloseWithin may release the rule)

	readers  []*topicReader
	known    map[ingest.TopicID]bool
	msg      Message // reused for every delivery
	lastTS   int64
	lastPoll time.Time
}

// topicReader is one topic's cursor for one rule.
type topicReader struct {
	rd       *engine.Reader
	name     string
	m        engine.Message
	has      bool   // m holds the next message, not yet delivered
	next     uint64 // Seq expected next
	lost     uint64 // rd.Lost() already counted
	skipFrom uint64 // after a skip: Seq the skip started at
	skipped  bool
	// typ is the topic's type as of the last topic poll (Message.Type: a
	// new pointer when it changes); changes is TopicStatus.TypeChanges then
	typ     *ingest.Type
	changes int
}

// StartLive starts one goroutine per rule over rec. It takes ownership of
// the rules: Close closes them.
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
		ru := &runner{live: l, rule: r, ctl: make(chan func()), known: map[ingest.TopicID]bool{}}
		l.runners = append(l.runners, ru)
	}
	for _, ru := range l.runners {
		l.wg.Add(1)
		go ru.run()
	}
	return l, nil
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
		ru.lastPoll = time.Time{}
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

// DumpFinished calls on_dump_finished on every rule, each on its goroutine,
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

// do runs f on the runner's goroutine and waits, at most ControlWait for
// the goroutine to take it and for f to finish. After a time-out f may
// still run later.
func (ru *runner) do(f func()) int {
	done := make(chan struct{})
	t := time.NewTimer(ru.live.opts.ControlWait)
	defer t.Stop()
	select {
	case ru.ctl <- func() { f(); close(done) }:
	case <-ru.live.stop:
		return doStopped
	case <-t.C:
		return doTimedOut
	}
	select {
	case <-done:
		return doDone
	case <-t.C:
		return doTimedOut
	}
}

func (ru *runner) run() {
	l := ru.live
	defer l.wg.Done()
	defer ru.exited.Store(true)
	idle := time.NewTimer(l.opts.Poll)
	defer idle.Stop()
	for {
		select {
		case <-l.stop:
			return
		case f := <-ru.ctl:
			f()
		default:
		}
		if time.Since(ru.lastPoll) >= l.opts.TopicPoll {
			ru.discover()
		}
		if ru.drain(l.opts.Batch) > 0 {
			continue
		}
		// caught up: let time pass in the rule, then wait
		ru.rule.Tick(l.rec.Now() - int64(l.opts.Poll))
		idle.Reset(l.opts.Poll)
		select {
		case <-l.stop:
			return
		case f := <-ru.ctl:
			f()
		case <-idle.C:
		}
	}
}

// discover opens readers, at the newest message, for new matching topics.
func (ru *runner) discover() {
	ru.lastPoll = time.Now()
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
		rd.SeekNewest()
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
			if !tr.has && tr.rd.ReadInto(&tr.m) {
				tr.has = true
				if tr.skipped {
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
		m.Topic, m.TS, m.GenTS, m.Seq, m.Data, m.Type = best.name, best.m.CaptureNs, best.m.GenNs, best.m.Seq, best.m.Data, best.typ
		r.Feed(m)
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
