package shm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
)

// WaitMode is how a consumer waits for new records of an idle segment.
type WaitMode int

const (
	// WaitFutex sleeps in FUTEX_WAIT on the segment's write cursor; the
	// producer wakes it. Lowest latency and no idle wake-ups, but each
	// idle segment parks one OS thread.
	WaitFutex WaitMode = iota
	// WaitPoll sleeps with an adaptive back-off from PollMin to PollMax
	// (no threads parked, latency up to PollMax).
	WaitPoll
)

// ConsumerOptions configure a Consumer. The zero value is usable.
type ConsumerOptions struct {
	// AllowUIDs are the owners (besides the consumer's own effective uid)
	// whose segments are accepted; AllowAnyOwner accepts every owner.
	AllowUIDs     []uint32
	AllowAnyOwner bool

	// MaxPayload refuses segments whose max_payload is larger
	// (16 MiB when 0).
	MaxPayload uint32

	// BatchBytes is the most ring bytes copied and ingested per batch
	// (one clock read per batch) and the size of each segment's private
	// buffer; 64 KiB when 0. A record larger than that is read through one
	// buffer shared by all segments.
	BatchBytes int

	// CheckInterval is how often an idle segment's liveness (pid,
	// heartbeat, state, header integrity) is checked; 1s when 0. A
	// segment with a heartbeat period checks at least twice per period.
	CheckInterval time.Duration

	// ScanInterval is how often the directory is rescanned: the polling
	// fallback when inotify is unavailable (or NoInotify), and a safety net
	// at ten times the interval when it is. 1s when 0.
	ScanInterval time.Duration
	NoInotify    bool

	// Wait selects futex wake-ups (default) or adaptive polling; PollMin
	// and PollMax bound the polling back-off (50µs and 5ms when 0).
	Wait             WaitMode
	PollMin, PollMax time.Duration

	// KeepFiles leaves closed and dead segments in the directory; by
	// default the consumer removes them once it has read them to the end.
	KeepFiles bool

	// NoPIDCheck disables the pid liveness check (producers in another pid
	// namespace); liveness then rests on state and heartbeat only.
	NoPIDCheck bool

	// OnError is called (from consumer goroutines) for every segment that
	// is quarantined or not recorded. It must not block.
	OnError func(error)

	// Clock judges heartbeat age; the system clock when nil.
	Clock clock.Clock
}

func (o *ConsumerOptions) ownerAllowed(uid uint32) bool {
	return o.AllowAnyOwner || uid == geteuid() || slices.Contains(o.AllowUIDs, uid)
}

func (o *ConsumerOptions) setDefaults() {
	if o.MaxPayload == 0 {
		o.MaxPayload = 16 << 20
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 64 << 10
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = time.Second
	}
	if o.ScanInterval <= 0 {
		o.ScanInterval = time.Second
	}
	if o.PollMin <= 0 {
		o.PollMin = 50 * time.Microsecond
	}
	if o.PollMax <= 0 {
		o.PollMax = 5 * time.Millisecond
	}
	if o.PollMax < o.PollMin {
		o.PollMax = o.PollMin
	}
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
}

// Consumer discovers the segments in a directory and feeds their records to
// an ingest.Sink: one goroutine per segment (one writer per topic), plus one
// watching the directory. Its methods are safe for concurrent use.
type Consumer struct {
	dir  string
	sink ingest.Sink
	opts ConsumerOptions

	mu        sync.Mutex
	followers map[string]*follower
	finished  map[string]fileID // KeepFiles: closed or dead segments left in place
	retired   SegmentStats      // counters of followers that ended
	errs      []error           // most recent errors, oldest first
	started   bool

	stop    atomic.Bool
	stopCh  chan struct{}
	wg      sync.WaitGroup
	watchWG sync.WaitGroup
	notify  *os.File // inotify, nil when polling
	big     bigBuffer
}

// NewConsumer returns a consumer of the segments in dir (created with mode
// 0755 when missing). Call Start (or Run) to begin.
func NewConsumer(dir string, sink ingest.Sink, opts ConsumerOptions) (*Consumer, error) {
	if err := platformSupported(); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, fmt.Errorf("%w: nil sink", ErrBadOption)
	}
	opts.setDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("shm: segment directory: %w", err)
	}
	return &Consumer{dir: dir, sink: sink, opts: opts, followers: map[string]*follower{}, finished: map[string]fileID{}, stopCh: make(chan struct{})}, nil
}

// Start scans the directory, starts following every segment and watches for
// new ones. It returns ErrClosed after Close.
func (c *Consumer) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop.Load() {
		return ErrClosed
	}
	if c.started {
		return nil
	}
	c.started = true
	if !c.opts.NoInotify {
		f, err := watchDir(c.dir)
		if err != nil {
			c.reportLocked(fmt.Errorf("shm: inotify unavailable, polling every %v: %w", c.opts.ScanInterval, err))
		} else {
			c.notify = f
		}
	}
	c.watchWG.Add(1)
	go c.watch()
	return nil
}

// Run starts the consumer, blocks until ctx is done, then closes it.
func (c *Consumer) Run(ctx context.Context) error {
	if err := c.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	return c.Close()
}

// Close stops every goroutine, reads each segment one last time, unmaps it
// and returns. Topics are not reported offline (the recorder is stopping).
func (c *Consumer) Close() error {
	if c.stop.Swap(true) {
		return nil
	}
	close(c.stopCh)
	if c.notify != nil {
		c.notify.Close()
	}
	c.watchWG.Wait()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		c.mu.Lock()
		for _, f := range c.followers {
			f.wake()
		}
		c.mu.Unlock()
		select {
		case <-done:
			return nil
		case <-t.C:
		}
	}
}

// ConsumerStats sums the counters of every segment followed so far.
type ConsumerStats struct {
	Segments    int    // segments followed now
	Quarantined int    // of those, quarantined
	Messages    uint64 // records ingested (accepted by the sink)
	Bytes       uint64 // payload bytes ingested
	Lost        uint64 // records overwritten before the consumer read them
	Rejected    uint64 // records the sink refused
	Errors      []error
}

// SegmentStats are one segment's counters.
type SegmentStats struct {
	Path      string
	Topic     ingest.TopicInfo
	Online    bool
	Messages  uint64
	Bytes     uint64
	Lost      uint64
	Rejected  uint64
	Err       error // quarantine reason, nil when healthy
	Recording bool  // false when the sink refused the topic
}

// Stats returns the totals.
func (c *Consumer) Stats() ConsumerStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := ConsumerStats{
		Messages: c.retired.Messages, Bytes: c.retired.Bytes, Lost: c.retired.Lost,
		Rejected: c.retired.Rejected, Errors: slices.Clone(c.errs),
	}
	for _, f := range c.followers {
		s := f.stats()
		st.Segments++
		if s.Err != nil {
			st.Quarantined++
		}
		st.Messages += s.Messages
		st.Bytes += s.Bytes
		st.Lost += s.Lost
		st.Rejected += s.Rejected
	}
	return st
}

// Segments returns the counters of every segment followed now, by path.
func (c *Consumer) Segments() []SegmentStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]SegmentStats, 0, len(c.followers))
	for _, f := range c.followers {
		out = append(out, f.stats())
	}
	slices.SortFunc(out, func(a, b SegmentStats) int { return strings.Compare(a.Path, b.Path) })
	return out
}

const maxErrs = 32

func (c *Consumer) report(err error) {
	c.mu.Lock()
	c.reportLocked(err)
	c.mu.Unlock()
}

func (c *Consumer) reportLocked(err error) {
	if len(c.errs) == maxErrs {
		c.errs = slices.Delete(c.errs, 0, 1)
	}
	c.errs = append(c.errs, err)
	if c.opts.OnError != nil {
		c.opts.OnError(err)
	}
}

func (c *Consumer) watch() {
	defer c.watchWG.Done()
	events := make(chan string, 64)
	if c.notify != nil {
		c.watchWG.Add(1)
		go func() {
			defer c.watchWG.Done()
			readEvents(c.notify, events, c.stopCh)
		}()
	}
	c.scan()
	every := c.opts.ScanInterval
	if c.notify != nil {
		every *= 10
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stopCh:
			return
		case name := <-events:
			if name == "" { // queue overflow: rescan
				c.scan()
			} else {
				c.notice(name)
			}
		case <-t.C:
			c.scan()
		}
	}
}

func (c *Consumer) scan() {
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		c.report(fmt.Errorf("shm: scan %s: %w", c.dir, err))
		return
	}
	for _, e := range ents {
		c.notice(e.Name())
	}
}

// isSegmentName accepts the names a producer gives segments; temporary files
// (leading '.') and anything else are ignored.
func isSegmentName(name string) bool {
	return strings.HasSuffix(name, SegmentSuffix) && len(name) > len(SegmentSuffix) &&
		name[0] != '.' && !strings.ContainsRune(name, '/')
}

// notice starts following name, or tells its follower the file changed.
func (c *Consumer) notice(name string) {
	if !isSegmentName(name) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop.Load() {
		return
	}
	if f := c.followers[name]; f != nil {
		f.changed.Store(true)
		f.wake()
		return
	}
	path := filepath.Join(c.dir, name)
	if id, ok := c.finished[name]; ok {
		if fi, err := lstat(path); err == nil && fi.id == id {
			return // read to the end already
		}
		delete(c.finished, name)
	}
	c.startLocked(name)
}

func (c *Consumer) startLocked(name string) {
	f := &follower{c: c, name: name, path: filepath.Join(c.dir, name), kick: make(chan struct{}, 1), spin: spinSlow}
	c.followers[name] = f
	c.wg.Add(1)
	go f.run()
}

// follower follows one segment file name for as long as it exists.
type follower struct {
	c     *Consumer
	name  string
	path  string
	kick  chan struct{}
	cur   atomic.Pointer[segment]
	state atomic.Pointer[SegmentStats] // topic, online, err for Stats

	changed   atomic.Bool
	mu        sync.Mutex   // guards cur changes against stats
	done      SegmentStats // counters of segments released so far
	seg       *segment
	id        ingest.TopicID
	recording bool
	online    bool
	badID     fileID // file identity that failed to open
	bad       bool
	lastID    fileID // the file last opened (or refused)
	spin      int    // polls before sleeping, see wait
	finished  bool   // the producer closed or died and its segment was read
	timer     *time.Timer
}

func (f *follower) stats() SegmentStats {
	var s SegmentStats
	if p := f.state.Load(); p != nil {
		s = *p
	}
	s.Path = f.path
	f.mu.Lock()
	defer f.mu.Unlock()
	s.Messages, s.Bytes, s.Lost, s.Rejected = f.done.Messages, f.done.Bytes, f.done.Lost, f.done.Rejected
	if seg := f.cur.Load(); seg != nil {
		s.Messages += seg.received.Load()
		s.Bytes += seg.bytes.Load()
		s.Lost += seg.lost.Load()
		s.Rejected += seg.rejected.Load()
	}
	return s
}

func (f *follower) publishState(err error) {
	s := &SegmentStats{Online: f.online, Recording: f.recording, Err: err}
	if f.seg != nil {
		s.Topic = f.seg.info
	}
	f.state.Store(s)
}

// wake interrupts the follower's wait.
func (f *follower) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
	if s := f.cur.Load(); s != nil {
		futexWake(s.c.futex)
	}
}

func (f *follower) run() {
	c := f.c
	defer c.wg.Done()
	debug.SetPanicOnFault(true) // see follow
	f.timer = time.NewTimer(time.Hour)
	defer f.timer.Stop()
	for !c.stop.Load() {
		if f.seg == nil {
			if f.finished || !f.open() {
				break
			}
			if f.seg == nil {
				f.sleep(c.opts.CheckInterval)
				continue
			}
		}
		f.follow()
	}
	if f.seg != nil {
		func() {
			defer func() {
				if r := recover(); r != nil && !isFault(r) {
					panic(r)
				}
			}()
			f.finalDrain()
		}()
		f.release()
	}
	c.mu.Lock()
	delete(c.followers, f.name)
	if f.finished && c.opts.KeepFiles {
		c.finished[f.name] = f.lastID
	}
	// A new file may have appeared while this follower was ending (its
	// inotify event only marked this follower): follow it now.
	if fi, err := lstat(f.path); err == nil && fi.id != f.lastID && !c.stop.Load() {
		c.startLocked(f.name)
	}
	st := f.stats()
	c.retired.Messages += st.Messages
	c.retired.Bytes += st.Bytes
	c.retired.Lost += st.Lost
	c.retired.Rejected += st.Rejected
	c.mu.Unlock()
}

// open maps the file; it returns false when the file no longer exists. A
// file that fails its checks is quarantined until it is replaced.
func (f *follower) open() (exists bool) {
	fi, err := lstat(f.path)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	if f.bad && fi.id == f.badID {
		return true
	}
	f.lastID = fi.id
	f.changed.Store(false)
	s, err := openSegment(f.path, &f.c.opts, &f.c.big)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false
		}
		f.quarantine(fi.id, err)
		return true
	}
	f.bad = false
	f.lastID = s.id
	f.seg = s
	f.cur.Store(s)
	id, err := f.c.sink.Discover(s.info)
	f.recording, f.online = err == nil, err == nil
	if err != nil {
		f.c.report(fmt.Errorf("shm: segment %s: topic %q not recorded: %w", f.path, s.info.Name, err))
	}
	f.id = id
	f.publishState(nil)
	return true
}

func (f *follower) quarantine(id fileID, err error) {
	f.bad, f.badID = true, id
	f.c.report(err)
	if f.seg != nil {
		// The quarantine is visible in Stats before the sink hears the
		// topic went offline.
		wasOnline := f.online
		f.online = false
		f.publishState(err)
		if wasOnline {
			f.c.sink.Offline(f.id)
		}
		f.release()
		return
	}
	f.publishState(err)
}

func (f *follower) release() {
	f.mu.Lock()
	s := f.seg
	f.done.Messages += s.received.Load()
	f.done.Bytes += s.bytes.Load()
	f.done.Lost += s.lost.Load()
	f.done.Rejected += s.rejected.Load()
	f.cur.Store(nil)
	f.mu.Unlock()
	f.seg.close()
	f.seg = nil
}

// drain reads what is there (only skipping it when the topic is not
// recorded).
func (f *follower) drain(budget int) (n int, done bool, err error) {
	s := f.seg
	if !f.recording {
		w, _, err := s.cursors()
		s.rpos = w
		return 0, true, err
	}
	return s.drain(f.c.sink, f.id, budget)
}

// finalDrain reads every record still there, once.
func (f *follower) finalDrain() {
	for range 1 << 16 {
		_, done, err := f.drain(64)
		if err != nil || done {
			return
		}
	}
}

const drainBudget = 16

// follow reads the current segment until it ends (closed, dead, replaced,
// quarantined) or the consumer stops.
//
// A fault on the mapping (the file was truncated under us) is recovered
// and quarantines the segment: run sets debug.SetPanicOnFault.
func (f *follower) follow() {
	c, s := f.c, f.seg
	defer func() {
		if r := recover(); r != nil {
			if !isFault(r) {
				panic(r)
			}
			f.quarantine(s.id, s.fail("file", 0, corruptf(ErrTruncated, "fault on the mapping (file truncated while mapped?): %v", r)))
		}
	}()
	interval := c.opts.CheckInterval
	if hb := time.Duration(s.h.heartbeatPeriod); hb > 0 && hb/2 < interval {
		interval = max(hb/2, time.Millisecond)
	}
	next := time.Now().Add(interval)
	idle := 0
	for !c.stop.Load() {
		n, done, err := f.drain(drainBudget)
		if err != nil {
			f.quarantine(s.id, err)
			return
		}
		if n > 0 || !done {
			idle = 0
			if !done { // busy: still look at liveness now and then
				if now := time.Now(); now.After(next) {
					if !f.check() {
						return
					}
					next = now.Add(interval)
				}
			}
			continue
		}
		now := time.Now()
		if !now.Before(next) || f.changed.Load() || s.closed() {
			if !f.check() {
				return
			}
			next = now.Add(interval)
			continue
		}
		f.wait(next.Sub(now), idle)
		idle++
	}
}

// check looks at the segment's integrity and liveness; false means the
// follower must stop following this mapping.
func (f *follower) check() bool {
	c, s := f.c, f.seg
	if err := s.verify(); err != nil {
		f.quarantine(s.id, err)
		return false
	}
	if f.changed.Swap(false) || c.notify == nil {
		if fi, err := lstat(f.path); err != nil || fi.id != s.id {
			// Removed or replaced: read what is left, then reopen.
			f.finalDrain()
			if f.online && err != nil {
				c.sink.Offline(f.id)
				f.online = false
			}
			f.release()
			return false
		}
	}
	dead := s.closed() || (!c.opts.NoPIDCheck && s.owner.gone())
	if dead {
		f.finalDrain()
		if f.online {
			c.sink.Offline(f.id)
			f.online = false
		}
		f.publishState(nil)
		if !c.opts.KeepFiles {
			if fi, err := lstat(f.path); err == nil && fi.id == s.id {
				os.Remove(f.path)
			}
		}
		f.finished = true
		f.release()
		return false
	}
	if p := s.h.heartbeatPeriod; p > 0 && f.recording {
		stale := c.opts.Clock.Now()-s.c.hbNs.Load() > 2*p
		switch {
		case stale && f.online:
			c.sink.Offline(f.id)
			f.online = false
			f.publishState(nil)
		case !stale && !f.online:
			if id, err := c.sink.Discover(s.info); err == nil {
				f.id, f.online = id, true
				f.publishState(nil)
			}
		}
	}
	return true
}

// Spinning before a futex sleep. A producer pays a FUTEX_WAKE system call
// (microseconds) for each publish that finds the consumer asleep; a fast
// producer and a consumer that keeps catching up and falling asleep can lock
// into one wake per message. So when a sleep ends within fastWake, the
// stream is fast: the follower polls (yielding) up to spinFast times before
// its next sleep, and goes back to spinSlow after a long sleep.
const (
	spinSlow = 2
	spinFast = 256
	fastWake = 100 * time.Microsecond
)

// wait sleeps until new records may be there, at most d.
func (f *follower) wait(d time.Duration, idle int) {
	s := f.seg
	if idle < f.spin {
		runtime.Gosched()
		return
	}
	if f.c.opts.Wait == WaitFutex && s.c.waiters != nil {
		s.c.waiters.Store(1)
		w := s.c.write.Load()
		if w != s.lastW || f.c.stop.Load() || f.changed.Load() {
			return
		}
		t0 := time.Now()
		futexWait(s.c.futex, uint32(w), d)
		if time.Since(t0) < fastWake {
			f.spin = spinFast
		} else {
			f.spin = spinSlow
		}
		return
	}
	step := f.c.opts.PollMin << min(idle-f.spin, 16)
	f.sleep(min(step, f.c.opts.PollMax, d))
}

func (f *follower) sleep(d time.Duration) {
	f.timer.Reset(d)
	select {
	case <-f.timer.C:
	case <-f.kick:
	case <-f.c.stopCh:
	}
}
