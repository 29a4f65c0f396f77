// The Consumer: its options, lifecycle (NewConsumer, Start, Run, Close),
// counters and error log. Discovery is in watch.go, following one segment
// in follower.go.

package shm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	// WaitFutex lets producers wake the consumer: through the directory's
	// doorbell (one OS thread in FUTEX_WAIT for every segment of producers
	// that ring it), else in FUTEX_WAIT on the segment's write cursor for
	// at most MaxFutexSleepers segments at a time, polling (PollMin to
	// PollMax) beyond. OS threads are bounded whatever the number of
	// segments.
	WaitFutex WaitMode = iota
	// WaitPoll sleeps with an adaptive back-off from PollMin to PollMax
	// (no threads parked, latency up to PollMax).
	WaitPoll
)

// MaxFutexSleepers bounds the segments of producers that do not ring the
// doorbell (older ones, or ones that cannot open it) whose consumer sleeps
// in FUTEX_WAIT on their write cursor, one OS thread each; the others are
// polled.
const MaxFutexSleepers = 4

// DefaultSilence is how long a producer whose liveness cannot rest on its
// pid (0, 1, beyond PID_MAX_LIMIT, or NoPIDCheck) and that promised no
// heartbeat may publish nothing before its topic is reported offline, when
// HeartbeatTimeout is 0.
const DefaultSilence = 2 * time.Second

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

	// SkipExisting ingests only what is published after Start: records a
	// segment already held when Start ran (up to its write cursor then) are
	// skipped, so a segment closed by then gives nothing; segments created
	// later are read from their first record. For a consumer that must not
	// see a previous run's data (the closed loop of "edr-lite replay",
	// a live viewer). The skipped records are not counted as lost.
	SkipExisting bool

	// NoPIDCheck disables the pid liveness check (producers in another pid
	// namespace); liveness then rests on state, heartbeats and activity.
	NoPIDCheck bool

	// HeartbeatTimeout is how long a producer may stay silent (no
	// heartbeat, no record) before its topic is offline: for a producer
	// that promised heartbeats (two of its periods when 0), and for one
	// that did not and whose pid cannot be checked (DefaultSilence when
	// 0). It comes back online at its next heartbeat or record.
	HeartbeatTimeout time.Duration

	// MaxSegments bounds the segments followed at once (0: no bound);
	// the others are not opened, reported once through OnError and counted
	// (ConsumerStats.Refused), and followed when room frees.
	MaxSegments int

	// OnError is called (from consumer goroutines) for every segment that
	// is quarantined or not recorded, and for a declared type that is not
	// used (a *TypeError: the topic is recorded as raw bytes). It must not
	// block.
	OnError func(error)

	// OnLeftover is called (from consumer goroutines) for every leftover
	// segment: one put in place before the consumer started whose producer
	// had closed it, or died, by the time the consumer opened it. Its
	// records are counted, not ingested (they are not live data: their
	// capture time is unknown). It must not block.
	OnLeftover func(SegmentStats)

	// Clock judges heartbeat age; the system clock when nil.
	Clock clock.Clock

	// Sweep, when > 0, reads busy segments (a record at least every 50
	// ms) together on one goroutine every Sweep, instead of waking a
	// segment's goroutine for each record a producer publishes while it
	// sleeps: the consumer wakes once per Sweep whatever the number of
	// busy topics and messages, and a record waits up to Sweep before it
	// is read (and handed to the sink). 0 (the default) wakes per record:
	// the least latency, the most CPU with many small messages
	// (docs/performance.md, "The whole-recorder budget"). Quiet segments
	// (nothing for 200 ms) wait as without it.
	Sweep time.Duration

	// DirectMin is the smallest record payload copied straight from the
	// segment into a sink that takes reservations (ingest.DirectSink):
	// DefaultDirectMin when 0; math.MaxUint32 never.
	DirectMin uint32
}

func (o *ConsumerOptions) ownerAllowed(uid uint32) bool {
	return o.AllowAnyOwner || uid == geteuid() || slices.Contains(o.AllowUIDs, uid)
}

func (o *ConsumerOptions) setDefaults() {
	if o.MaxPayload == 0 {
		o.MaxPayload = 16 << 20
	}
	if o.DirectMin == 0 {
		o.DirectMin = DefaultDirectMin
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
	dir    string
	sink   ingest.Sink
	direct ingest.DirectSink // sink, when it takes reservations (segment.direct)
	batch  ingest.BatchSink  // sink, when it takes runs (segment.batcher)
	opts   ConsumerOptions

	mu        sync.Mutex
	followers map[string]*follower
	finished  map[string]fileID    // KeepFiles: closed or dead segments left in place
	retired   SegmentStats         // counters of followers that ended
	startAt   map[string]startMark // SkipExisting: where each segment stood at Start (read-only after)
	errs      []error              // most recent errors, oldest first
	started   bool

	startNs int64           // wall-clock time of Start: segments put in place before it may be leftovers
	refused map[string]bool // MaxSegments: names not followed
	// refused since the last report, and the first of them
	newRefused   int
	firstRefused string
	leftover     SegmentStats // sums over leftover segments (Messages, Bytes, Lost)
	nLeft        int          // leftover segments read

	stop    atomic.Bool
	stopCh  chan struct{}
	wg      sync.WaitGroup
	watchWG sync.WaitGroup
	notify  *os.File // inotify, nil when polling
	big     bigBuffer

	bell    *bell         // the directory's doorbell; nil when unusable
	sweep   *sweeper      // reads busy segments every Sweep; nil when Sweep is 0
	pids    pidTable      // pidfds shared among segments of one process
	sleeper chan struct{} // MaxFutexSleepers tokens for write-cursor futex waits
	opening chan struct{} // segments opened at once: a burst of thousands stays a few threads in system calls
}

// NewConsumer returns a consumer of the segments in dir (created with mode
// 0700 when missing: producers of other users need a directory the
// operator made writable for them, e.g. 0770 with a shared group). Call Start (or Run) to begin.
func NewConsumer(dir string, sink ingest.Sink, opts ConsumerOptions) (*Consumer, error) {
	if err := platformSupported(); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, fmt.Errorf("%w: nil sink", ErrBadOption)
	}
	opts.setDefaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("shm: segment directory: %w", err)
	}
	direct, _ := sink.(ingest.DirectSink) // checked once: large records go straight into the recorder
	batch, _ := sink.(ingest.BatchSink)   // and runs of the others
	return &Consumer{dir: dir, sink: sink, direct: direct, batch: batch, opts: opts, followers: map[string]*follower{}, finished: map[string]fileID{},
		refused: map[string]bool{}, stopCh: make(chan struct{}), sleeper: make(chan struct{}, MaxFutexSleepers),
		opening: make(chan struct{}, 2)}, nil
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
	c.startNs = time.Now().UnixNano()
	if c.opts.SkipExisting {
		c.markExisting()
	}
	if c.opts.Wait == WaitFutex {
		c.openBellLocked()
	}
	if c.opts.Sweep > 0 {
		c.sweep = newSweeper(c, c.opts.Sweep)
		c.wg.Add(1)
		go c.sweep.run()
	}
	c.startWatchLocked()
	return nil
}

// startMark is where a segment's write cursor stood when Start ran.
type startMark struct {
	id fileID
	w  uint64
}

// markExisting notes, for SkipExisting, the write cursor of every segment
// in the directory. A segment that cannot be opened now is not marked: its
// follower reports it as usual.
func (c *Consumer) markExisting() {
	c.startAt = map[string]startMark{}
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !isSegmentName(e.Name()) {
			continue
		}
		s, err := openSegment(filepath.Join(c.dir, e.Name()), &c.opts, &c.big, nil)
		if err != nil {
			continue
		}
		if w, _, err := s.cursors(); err == nil {
			c.startAt[e.Name()] = startMark{id: s.id, w: w}
		}
		s.close()
	}
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
	defer func() {
		if c.bell != nil {
			c.bell.close() // after every follower: none rings it or holds a slot
		}
	}()
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

// Options returns the consumer's options, defaults applied.
func (c *Consumer) Options() ConsumerOptions { return c.opts }

// ConsumerStats sums the counters of every segment followed so far.
type ConsumerStats struct {
	Segments    int    // segments followed now
	Quarantined int    // of those, quarantined
	Messages    uint64 // records ingested (accepted by the sink)
	Bytes       uint64 // payload bytes ingested
	Lost        uint64 // records overwritten before the consumer read them
	Rejected    uint64 // records the sink refused
	// Refused is how many segments are not followed now for MaxSegments.
	Refused int
	// Leftovers counts the segments found already finished (closed, or
	// their producer dead, before the consumer followed them), with the
	// records and payload bytes they held: read and counted, not ingested.
	Leftovers        int
	LeftoverMessages uint64
	LeftoverBytes    uint64
	// Doorbell reports whether producers can wake the consumer through the
	// directory's doorbell (else each idle segment is waited on apart).
	Doorbell bool
	Errors   []error
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
	// TypeErr is why the type the segment declares is not used (the topic
	// is recorded as raw bytes); nil when it was handed to the sink.
	TypeErr error
}

// Stats returns the totals.
func (c *Consumer) Stats() ConsumerStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := ConsumerStats{
		Messages: c.retired.Messages, Bytes: c.retired.Bytes, Lost: c.retired.Lost,
		Rejected: c.retired.Rejected, Errors: slices.Clone(c.errs), Refused: len(c.refused),
		Leftovers: c.nLeft, LeftoverMessages: c.leftover.Messages, LeftoverBytes: c.leftover.Bytes,
		Doorbell: c.bell != nil,
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
