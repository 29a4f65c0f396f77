package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/edr-lite/edr-lite/arena"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
)

// Recorder keeps recent history of every discovered topic in per-topic rings
// and serves readers (rules, status, the dump pipeline). It implements
// ingest.Sink.
//
// Discover, Offline, Topics, NewReader and Close are safe for concurrent use.
// IngestAt and Ingest are safe for concurrent use across topics; for one
// topic exactly one goroutine at a time may ingest unless the topic was
// discovered with MultiProducer. Close must not run concurrently with
// Ingest: stop sources first.
type Recorder struct {
	cfg   Config
	clk   clock.Clock
	arena *arena.Arena

	// table is indexed by TopicID; slots are written under mu and read
	// lock-free on the hot path.
	table []atomic.Pointer[topic]

	mu      sync.Mutex
	topics  []*topic // in id order, for iteration
	byName  map[string]ingest.TopicID
	readers int
	closed  bool
	unknown atomic.Uint64 // ingests for ids never handed out

	busySkip bool        // cfg.BusySkipData, read on the hot path
	busy     atomic.Bool // a dump is being written (SetBusy)
}

// topic is one recorded topic.
type topic struct {
	id          ingest.TopicID
	info        ingest.TopicInfo
	settings    topicSettings
	ring        *ring
	block       arena.Block
	mu          sync.Mutex // serializes writers of a MultiProducer topic
	multi       bool
	online      atomic.Bool
	offline     atomic.Uint64 // messages rejected while offline
	skippedBusy dropLog       // messages dropped while a dump was written (BusySkipData)
	sourceLost  dropLog       // messages the source reported lost before they reached the recorder
	onlineNs    atomic.Int64  // when the topic was (re)discovered
	offlineNs   atomic.Int64  // when the topic last went offline
	// discoveredNs is when the topic was first discovered (set before the
	// topic is published, never changed).
	discoveredNs int64
	types        []TypeSpan // type history, oldest first (r.mu; types.go)
	typeChanges  int        // rediscoveries with another type (r.mu)
	// pins counts open Readers and pending dumps that need the ring; a
	// destroy_on_offline topic's ring is freed when it drops to zero.
	pins  atomic.Int32
	freed bool // ring returned to the arena (r.mu)
}

// New validates cfg, maps and touches the cache, and returns a recorder ready
// to Discover topics. Every fallible resource is acquired here.
func New(cfg Config) (*Recorder, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a, err := arena.New(arena.Options{Size: cfg.CacheSize, MinBlock: DefaultMinRingBytes, Lock: cfg.LockMemory})
	if err != nil {
		return nil, &ConfigError{Field: "CacheSize", Reason: err.Error()}
	}
	r := &Recorder{
		cfg:      cfg,
		clk:      cfg.Clock,
		arena:    a,
		table:    make([]atomic.Pointer[topic], cfg.MaxTopics),
		byName:   make(map[string]ingest.TopicID),
		busySkip: cfg.BusySkipData,
	}
	if r.clk == nil {
		r.clk = clock.System{}
	}
	return r, nil
}

func topicKey(info *ingest.TopicInfo) string { return info.Name + "#" + info.Channel }

// Discover registers a topic (see Sink). Rediscovering a known topic (same
// Name and Channel) returns its id and brings it back online.
//
// The topic's type is info.Type unless a TopicOverride gives one; it is
// checked (Config.CheckType) and, when refused, the topic is recorded as
// raw bytes all the same, the cause in TopicStatus.TypeErr. A rediscovery
// with another type starts a new type span from the next message (see
// TypeSpan): the source must call Discover from the goroutine that ingests
// the topic, as the Sink contract says.
func (r *Recorder) Discover(info ingest.TopicInfo) (ingest.TopicID, error) {
	typ, typeErr := r.typeFor(&info)
	info.Type = typ
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, ErrClosed
	}
	key := topicKey(&info)
	now := r.clk.Now()
	if id, ok := r.byName[key]; ok {
		t := r.topics[id]
		t.setType(typ, typeErr, now)
		t.onlineNs.Store(now)
		t.online.Store(true)
		return id, nil
	}

	s, err := r.cfg.settingsFor(&info)
	if err != nil {
		return 0, err
	}
	if len(r.topics) >= len(r.table) {
		return 0, fmt.Errorf("%w: %d topics (MaxTopics), cannot add %q", ErrTooManyTopics, len(r.table), info.Name)
	}
	blk, err := r.arena.Alloc(s.ringBytes)
	if err != nil {
		u := r.arena.Usage()
		return 0, fmt.Errorf("%w: topic %q needs %d bytes, largest free block %d of %d: %w", ErrNoMemory, info.Name, s.ringBytes, u.LargestFree, u.Total, err)
	}
	rg, err := newRing(blk.Bytes(), s.ring)
	if err != nil {
		r.arena.Free(blk)
		return 0, fmt.Errorf("engine: topic %q: %w", info.Name, err)
	}
	t := &topic{
		id:       ingest.TopicID(len(r.topics)),
		info:     info,
		settings: s,
		ring:     rg,
		block:    blk,
		multi:    info.MultiProducer,
	}
	t.setType(typ, typeErr, now)
	t.discoveredNs = now
	t.onlineNs.Store(now)
	t.online.Store(true)
	r.topics = append(r.topics, t)
	r.byName[key] = t.id
	r.table[t.id].Store(t)
	return t.id, nil
}

// Now reads the recorder's clock.
func (r *Recorder) Now() int64 { return r.clk.Now() }

// IngestAt copies payload into the topic's ring (see Sink). It never blocks
// (a MultiProducer topic takes a short mutex), never allocates and never
// keeps payload.
func (r *Recorder) IngestAt(id ingest.TopicID, captureNs, genNs int64, payload []byte) bool {
	// accept's checks, written out: this is the per-message path.
	if uint(id) >= uint(len(r.table)) {
		r.unknown.Add(1)
		return false
	}
	t := r.table[id].Load()
	if t == nil {
		r.unknown.Add(1)
		return false
	}
	if !t.online.Load() {
		t.offline.Add(1)
		return false
	}
	if r.busySkip && r.busy.Load() {
		t.skippedBusy.record(captureNs)
		return false
	}
	if t.multi {
		t.mu.Lock()
		ok := t.ring.append(captureNs, genNs, payload)
		t.mu.Unlock()
		return ok
	}
	return t.ring.append(captureNs, genNs, payload)
}

// accept returns the topic a message of id goes to (IngestAt's checks), or nil when the
// message is rejected (counted: unknown id, offline, a dump being written
// with BusySkipData).
func (r *Recorder) accept(id ingest.TopicID, captureNs int64) *topic {
	if uint(id) >= uint(len(r.table)) {
		r.unknown.Add(1)
		return nil
	}
	t := r.table[id].Load()
	if t == nil {
		r.unknown.Add(1)
		return nil
	}
	if !t.online.Load() {
		t.offline.Add(1)
		return nil
	}
	if r.busySkip && r.busy.Load() {
		t.skippedBusy.record(captureNs)
		return nil
	}
	return t
}

// ReserveAt reserves room in the topic's ring for an n-byte message (see
// ingest.DirectSink): dst is ring memory, to be filled and then published
// with Commit or dropped with Abort. Readers see nothing of it before
// Commit. The checks and counts are IngestAt's (ok false, dst nil); a
// MultiProducer topic takes no reservations (ok true, dst nil: use
// IngestAt). It never blocks and never allocates; like IngestAt it may
// evict old entries to make room, also for a message then aborted. A
// negative n is oversize.
func (r *Recorder) ReserveAt(id ingest.TopicID, captureNs, genNs int64, n int) (dst []byte, ok bool) {
	t := r.accept(id, captureNs)
	if t == nil {
		return nil, false
	}
	if t.multi {
		return nil, true
	}
	return t.ring.reserve(captureNs, genNs, uint64(n))
}

// Commit publishes the topic's reserved message (see ReserveAt) and reports
// whether there was one.
func (r *Recorder) Commit(id ingest.TopicID) bool {
	if t := r.topic(id); t != nil && !t.multi {
		return t.ring.commit()
	}
	return false
}

// Abort drops the topic's reserved message: no reader ever sees it.
func (r *Recorder) Abort(id ingest.TopicID) {
	if t := r.topic(id); t != nil && !t.multi {
		t.ring.abort()
	}
}

// StageBatch copies a run of messages of one topic into its ring, invisible
// to readers until CommitBatch (see ingest.BatchSink): the topic's checks
// are made once for the run, the messages take their sequence numbers and
// one store of the ring's newest position publishes them all. It returns
// how many it staged; 0 (nothing staged, nothing counted) when the topic
// takes no run now: unknown or offline, a dump being written with
// BusySkipData, a MultiProducer topic, or a first message larger than the
// topic's max packet — the source then hands the messages to IngestAt,
// which rejects and counts them as it does. It never blocks and never
// allocates; like IngestAt it may evict old entries, also for a run then
// aborted.
func (r *Recorder) StageBatch(id ingest.TopicID, captureNs int64, src []byte, msgs []ingest.BatchMessage) int {
	if uint(id) >= uint(len(r.table)) {
		return 0
	}
	t := r.table[id].Load()
	if t == nil || t.multi || !t.online.Load() || (r.busySkip && r.busy.Load()) {
		return 0
	}
	return t.ring.stageBatch(captureNs, src, msgs)
}

// CommitBatch publishes the topic's staged run (see StageBatch) and returns
// how many messages it held.
func (r *Recorder) CommitBatch(id ingest.TopicID) int {
	if t := r.topic(id); t != nil && !t.multi {
		return t.ring.commitBatch()
	}
	return 0
}

// AbortBatch drops the topic's staged run: no reader ever sees it.
func (r *Recorder) AbortBatch(id ingest.TopicID) {
	if t := r.topic(id); t != nil && !t.multi {
		t.ring.abortBatch()
	}
}

// Lost counts n messages of the topic that its source reports lost before
// they reached the recorder, detected at atNs on the recorder's clock (see
// Sink). They appear in TopicCounters.LostAtSource and in the accounting of
// every dump whose window holds atNs. Unknown ids and n == 0 are ignored.
func (r *Recorder) Lost(id ingest.TopicID, atNs int64, n uint64) {
	if n == 0 {
		return
	}
	if t := r.topic(id); t != nil {
		t.sourceLost.recordN(atNs, n)
	}
}

// Ingest is IngestAt stamped with the recorder's clock, read at this call
// (with the default system clock one clock_gettime, tens of ns: a source
// with batches reads Now once per batch and calls IngestAt).
func (r *Recorder) Ingest(id ingest.TopicID, genNs int64, payload []byte) bool {
	return r.IngestAt(id, r.clk.Now(), genNs, payload)
}

// Offline marks the topic's producer gone: further ingests are rejected and
// counted until it is discovered again. With Config.DestroyOnOffline the
// ring returns to the arena once no Reader and no pending dump needs it (the
// topic then gets a new id when discovered again); the source must not
// ingest for id after calling Offline.
func (r *Recorder) Offline(id ingest.TopicID) {
	if t := r.topic(id); t != nil {
		t.offlineNs.Store(r.clk.Now())
		t.online.Store(false)
		r.maybeFree(t)
	}
}

// maybeFree returns a destroy_on_offline topic's ring to the arena when it
// is offline and unpinned.
func (r *Recorder) maybeFree(t *topic) {
	if !r.cfg.DestroyOnOffline {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.freed || r.closed || t.online.Load() || t.pins.Load() > 0 {
		return
	}
	t.freed = true
	r.table[t.id].Store(nil)
	delete(r.byName, topicKey(&t.info))
	if err := r.arena.Free(t.block); err != nil {
		panic("BUG: engine: freeing a topic ring: " + err.Error())
	}
}

func (r *Recorder) topic(id ingest.TopicID) *topic {
	if uint(id) >= uint(len(r.table)) {
		return nil
	}
	return r.table[id].Load()
}

// TopicStatus is a snapshot of one topic.
type TopicStatus struct {
	ID ingest.TopicID
	// Info is the topic as discovered, Info.Type the type it is recorded
	// under now (after the configuration's override and the check).
	Info ingest.TopicInfo
	// TypeErr is why the type the topic declared was refused (it is then
	// recorded as raw bytes); nil when it was accepted.
	TypeErr error
	// TypeChanges counts the times the topic was rediscovered with
	// another type (a producer restarted with a new schema).
	TypeChanges int
	Online      bool
	// RingBytes is the ring's capacity; RetentionNs how much history it
	// aims to keep (pre + max post + 2*guard).
	RingBytes   int
	RetentionNs int64
	// Freed is set once a destroy_on_offline topic's ring was returned.
	Freed bool
	// RateHz is the message rate over the history held (0 when unknown).
	RateHz   float64
	Counters TopicCounters
}

// Topics returns a snapshot of every topic, in id order.
func (r *Recorder) Topics() []TopicStatus {
	r.mu.Lock()
	ts := append([]*topic(nil), r.topics...)
	r.mu.Unlock()
	out := make([]TopicStatus, len(ts))
	for i, t := range ts {
		st := TopicStatus{
			ID:          t.id,
			Online:      t.online.Load(),
			RingBytes:   len(t.block.Bytes()),
			RetentionNs: t.settings.ring.retentionNs,
		}
		r.mu.Lock()
		st.Info, st.TypeChanges = t.info, t.typeChanges // the type changes under r.mu
		if n := len(t.types); n > 0 {
			st.TypeErr = t.types[n-1].Err
		}
		st.Freed = t.freed
		if !t.freed {
			t.pins.Add(1) // keep the ring while reading its counters
		}
		r.mu.Unlock()
		if !st.Freed {
			st.Counters = t.ring.counters()
			t.pins.Add(-1)
			r.maybeFree(t)
		}
		st.Counters.RejectedOffline = t.offline.Load()
		st.Counters.SkippedBusy = t.skippedBusy.load()
		st.Counters.LostAtSource = t.sourceLost.load()
		if c := st.Counters; c.HeldMessages > 1 && c.NewestNs > c.OldestNs {
			st.RateHz = float64(c.HeldMessages-1) / (float64(c.NewestNs-c.OldestNs) / 1e9)
		}
		out[i] = st
	}
	return out
}

// ArenaUsage reports the cache's occupancy.
func (r *Recorder) ArenaUsage() arena.Usage { return r.arena.Usage() }

// Close stops the recorder. Ingest must no longer be called. The cache is
// unmapped once the last Reader is closed (and every Retain is done).
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	for _, t := range r.topics {
		t.online.Store(false)
	}
	release := r.readers == 0
	r.mu.Unlock()
	if release {
		return r.arena.Close()
	}
	return nil
}

// releaseReader is called when a Reader closes.
func (r *Recorder) releaseReader() error {
	r.mu.Lock()
	r.readers--
	release := r.closed && r.readers == 0
	r.mu.Unlock()
	if release {
		return r.arena.Close()
	}
	return nil
}

// errTopic wraps ErrUnknownTopic with the id.
func errTopic(id ingest.TopicID) error {
	return fmt.Errorf("%w: id %d", ErrUnknownTopic, id)
}

var (
	_ ingest.DirectSink = (*Recorder)(nil)
	_ ingest.BatchSink  = (*Recorder)(nil)
)
