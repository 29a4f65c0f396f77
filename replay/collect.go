package replay

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/edr-lite/edr-lite/capture"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/shm"
)

// The collector is the closed loop's private recorder: an engine.Recorder
// fed by its own shm.Consumer on each listened segment directory and its
// own capture.UDPSource on each listened address (the recorder's normal
// sources, no daemon), whose rings one drainer goroutine empties into
// memory as messages arrive. It records only the expected topics and the
// acknowledgement topic; every other topic of those directories (the
// replayed inputs among them) is refused at Discover.

// Listen is where the system under test publishes its outputs: a segment
// directory (Shm) or a UDP address to listen on (UDP, "host:port", with
// Topic the capture.Template naming its datagrams' topic, "udp/{dport}"
// when empty).
type Listen struct {
	Shm        string
	UDP, Topic string
}

func (l Listen) String() string {
	if l.Shm != "" {
		return "shm:" + l.Shm
	}
	if l.Topic != "" {
		return "udp:" + l.UDP + "=" + l.Topic
	}
	return "udp:" + l.UDP
}

// gotMsg is one message the system under test published, as collected.
type gotMsg struct {
	CaptureNs int64 // when the collector's source read it (system clock)
	GenNs     int64 // the producer time it carries (0 = none)
	Data      []byte
}

// collected is one topic the collector records.
type collected struct {
	info     ingest.TopicInfo
	expected int  // index of the expected topic it carries, -1 for none
	dynamic  bool // an output topic the recording does not hold (input-only)
	ack      bool
	reader   *engine.Reader
	msgs     []gotMsg
	bytes    int64
	extra    uint64 // messages beyond the topic's cap: counted, not kept
	lost     uint64 // overwritten in the ring before the drainer read them
	acks     int    // messages counted as acknowledgements
}

// collector records the expected topics; see the file comment.
type collector struct {
	rec       *engine.Recorder
	consumers []*shm.Consumer
	udps      []*capture.UDPSource
	listen    []Listen // of consumers, by index
	listenUDP []Listen // of udps, by index
	cancelUDP context.CancelFunc
	udpWG     sync.WaitGroup

	expect  map[string]int    // "name#channel" (as the SUT publishes it) -> expected topic index
	caps    []func() topicCap // by expected topic index
	dynamic []string          // globs of output topics the recording does not hold
	dynCap  topicCap          // what is kept of each of those
	ackGlob string

	notify chan struct{} // signalled by IngestAt and Discover
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	topics   []*collected // by recorder TopicID
	pending  []pendingTopic
	byID     map[ingest.TopicID]*collected
	changed  chan struct{}  // closed (and replaced) whenever something was drained
	scratch  engine.Message // drain's (under mu)
	timer    *time.Timer    // waitUntil's: one waiter at a time (the player holding the turn)
	outputs  int            // messages on expected topics
	acks     int            // acknowledgements
	lastNs   int64          // capture time of the newest message drained
	warnings []string
}

// pendingTopic is a topic discovered by a source, not yet given a reader.
type pendingTopic struct {
	id   ingest.TopicID
	info ingest.TopicInfo
}

// topicCap bounds what the collector keeps of one expected topic: twice
// what the recording holds, plus some, so that memory follows the input
// (the dump) and not what a runaway node publishes. The byte bound grows
// as the player reads the recorded outputs.
type topicCap struct {
	n     int
	bytes int64
}

// collectorOptions configure a collector.
type collectorOptions struct {
	listen  []Listen
	expect  []string          // the names ("name" or "name#channel") the SUT publishes, by expected topic index
	caps    []func() topicCap // by expected topic index: what may be kept now
	ackGlob string            // acknowledgement topic glob ("" = none)
	dynamic []string          // globs of outputs the recording does not hold (input-only), collected too
	dynCap  topicCap          // bound of each such topic
}

// udpRcvBuf is the receive buffer of each listened UDP socket (as far as
// the system allows without CAP_NET_ADMIN).
const udpRcvBuf = 8 << 20

// collectRing is each collected topic's ring: the drainer empties it within
// milliseconds, so it only has to hold a burst (a message larger than it
// is dropped by the recorder, counted as oversize, and reported missing).
const collectRing = 8 << 20

// newCollector starts the private recorder and its sources. Sources start
// with shm.ConsumerOptions.SkipExisting: what the directories held before
// (a previous run's outputs) is not collected.
func newCollector(o collectorOptions) (*collector, error) {
	if len(o.listen) == 0 {
		return nil, fmt.Errorf("%w: nowhere to listen for the outputs (no shm directory or UDP address)", ErrOptions)
	}
	topicBytes := int64(collectRing)
	include := append(append([]string(nil), o.expect...), o.dynamic...)
	if o.ackGlob != "" {
		include = append(include, o.ackGlob)
	}
	rec, err := engine.New(engine.Config{
		CacheSize:  topicBytes * int64(len(include)+1),
		TopicBytes: topicBytes,
		Clock:      clock.System{}, // precise capture times: they measure the node's latency
		Include:    include,
		MaxTopics:  64,
		Pre:        new(time.Minute), // the drainer empties the rings long before
		Post:       new(time.Millisecond),
	})
	if err != nil {
		return nil, fmt.Errorf("replay: collector: %w", err)
	}
	c := &collector{rec: rec, expect: map[string]int{}, caps: o.caps, ackGlob: o.ackGlob, dynamic: o.dynamic, dynCap: o.dynCap,
		notify: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		byID: map[ingest.TopicID]*collected{}, changed: make(chan struct{})}
	for i, e := range o.expect {
		c.expect[e] = i
	}
	go c.drainer()
	sink := collectSink{c}
	for _, l := range o.listen {
		if l.Shm == "" {
			continue
		}
		cons, err := shm.NewConsumer(l.Shm, sink, shm.ConsumerOptions{SkipExisting: true, KeepFiles: true, OnError: c.sourceError})
		if err == nil {
			err = cons.Start()
		}
		if err != nil {
			c.close()
			return nil, fmt.Errorf("replay: listening on %s: %w", l, err)
		}
		c.consumers = append(c.consumers, cons)
		c.listen = append(c.listen, l)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancelUDP = cancel
	for _, l := range o.listen {
		if l.UDP == "" {
			continue
		}
		// a large buffer: a node answering a burst of inputs as fast as
		// possible sends its answers faster than one reader may take them
		src, err := capture.NewUDP(capture.UDPOptions{Addr: l.UDP, Topic: l.Topic, MaxPacket: 65535, RcvBuf: udpRcvBuf}, sink)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("replay: listening on %s: %w", l, err)
		}
		c.udps = append(c.udps, src)
		c.listenUDP = append(c.listenUDP, l)
		c.udpWG.Add(1)
		go func() {
			defer c.udpWG.Done()
			if err := src.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				c.sourceError(fmt.Errorf("replay: %s: %w", l, err))
			}
		}()
	}
	return c, nil
}

// sourceError keeps a source's error as a warning, unless it only says a
// topic is not collected (inputs and other topics in a listened directory).
func (c *collector) sourceError(err error) {
	if errors.Is(err, engine.ErrExcluded) {
		return
	}
	c.mu.Lock()
	if len(c.warnings) < 32 {
		c.warnings = append(c.warnings, err.Error())
	}
	c.mu.Unlock()
}

func (c *collector) signal() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// collectSink is the sources' ingest.Sink: the recorder, plus a wake-up of
// the drainer. IngestAt adds one non-blocking channel send to the
// recorder's path: no allocation, never blocks.
type collectSink struct{ c *collector }

func (s collectSink) Discover(info ingest.TopicInfo) (ingest.TopicID, error) {
	id, err := s.c.rec.Discover(info)
	if err == nil {
		s.c.mu.Lock()
		if s.c.byID[id] == nil {
			s.c.pending = append(s.c.pending, pendingTopic{id, info})
		}
		s.c.mu.Unlock()
		s.c.signal()
	}
	return id, err
}

func (s collectSink) Now() int64 { return s.c.rec.Now() }

func (s collectSink) IngestAt(id ingest.TopicID, captureNs, genNs int64, payload []byte) bool {
	ok := s.c.rec.IngestAt(id, captureNs, genNs, payload)
	s.c.signal()
	return ok
}

func (s collectSink) Offline(id ingest.TopicID)                    { s.c.rec.Offline(id) }
func (s collectSink) Lost(id ingest.TopicID, atNs int64, n uint64) { s.c.rec.Lost(id, atNs, n) }

// drainer empties the rings into memory whenever a source signals (and
// every 20ms, in case a signal raced with a read), until stop; then once
// more.
func (c *collector) drainer() {
	defer close(c.done)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.notify:
		case <-t.C:
		case <-c.stop:
			c.drain()
			return
		}
		c.drain()
	}
}

// drain opens readers for new topics and reads every ring to its end. The
// drainer calls it, and so does a waiter that takes the wake-up first
// (waitUntil): the readers are used under c.mu, one goroutine at a time.
func (c *collector) drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := &c.scratch
	for _, pt := range c.pending {
		id, info := pt.id, pt.info
		if c.byID[id] != nil {
			continue
		}
		rd, err := c.rec.NewReader(id)
		if err != nil {
			continue
		}
		t := &collected{info: info, reader: rd, expected: -1}
		key := info.Name + "#" + info.Channel
		if i, ok := c.expect[key]; ok {
			t.expected = i
		} else if i, ok := c.expect[info.Name]; ok && info.Channel == "" {
			t.expected = i
		}
		tp := &Topic{Name: info.Name, Channel: info.Channel}
		t.ack = c.ackGlob != "" && matchTopic([]string{c.ackGlob}, tp)
		t.dynamic = t.expected < 0 && len(c.dynamic) > 0 && matchTopic(c.dynamic, tp)
		c.byID[id] = t
		c.topics = append(c.topics, t)
	}
	c.pending = c.pending[:0]
	got := false
	for _, t := range c.topics {
		for t.reader.ReadInto(m) {
			got = true
			c.lastNs = max(c.lastNs, m.CaptureNs)
			if t.ack {
				t.acks++
				c.acks++
			}
			if t.expected < 0 && !t.dynamic {
				continue
			}
			c.outputs++
			cp := c.dynCap
			if t.expected >= 0 {
				cp = c.caps[t.expected]()
			}
			if len(t.msgs) >= cp.n || t.bytes+int64(len(m.Data)) > cp.bytes {
				t.extra++
				continue
			}
			t.msgs = append(t.msgs, gotMsg{CaptureNs: m.CaptureNs, GenNs: m.GenNs, Data: append([]byte(nil), m.Data...)})
			t.bytes += int64(len(m.Data))
		}
		t.lost = t.reader.Lost()
	}
	if got {
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// counts returns the outputs and acknowledgements collected so far and the
// capture time of the newest message.
func (c *collector) counts() (outputs, acks int, lastNs int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outputs, c.acks, c.lastNs
}

// waitUntil blocks until cond (called with the collector's lock held,
// with the counts so far) holds, ctx is done, or deadline passes. ok says
// whether cond held.
//
// The waiter drains the rings itself when it takes the sources' wake-up
// before the drainer goroutine does: a lockstep step then costs one
// goroutine hand-off less.
func (c *collector) waitUntil(ctx context.Context, deadline time.Time, cond func(outputs, acks int, lastNs int64) bool) (ok bool, err error) {
	if c.timer == nil {
		c.timer = time.NewTimer(time.Hour)
	}
	timer := c.timer
	stop := func() {
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
	for {
		c.mu.Lock()
		if cond(c.outputs, c.acks, c.lastNs) {
			c.mu.Unlock()
			return true, nil
		}
		ch := c.changed
		c.mu.Unlock()
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		stop()
		timer.Reset(left)
		select {
		case <-ch:
			stop()
		case <-c.notify:
			stop()
			c.drain()
		case <-timer.C:
		case <-ctx.Done():
			stop()
			return false, ctx.Err()
		}
	}
}

// finish stops the sources (each reads what is left), drains the rings a
// last time and returns what was collected per expected topic (index), the
// outputs on topics the recording does not hold (by name), and the
// warnings. The collector is closed.
func (c *collector) finish() (byExpected map[int]*collected, dynamic []*collected, warnings []string) {
	c.close()
	for i, cons := range c.consumers {
		if n := cons.Stats().Lost; n > 0 {
			c.warnings = append(c.warnings, fmt.Sprintf("%s: %d messages overwritten in their segments before the collector read them", c.listen[i], n))
		}
	}
	for i, u := range c.udps {
		if n := u.Stats().Lost; n > 0 {
			c.warnings = append(c.warnings, fmt.Sprintf("%s: the kernel dropped %d datagrams before the collector read them", c.listenUDP[i], n))
		}
	}
	byExpected = map[int]*collected{}
	for _, t := range c.topics {
		if t.dynamic {
			dynamic = append(dynamic, t)
		}
		if t.expected >= 0 {
			if prev := byExpected[t.expected]; prev == nil || len(t.msgs) > len(prev.msgs) {
				byExpected[t.expected] = t
			}
		}
	}
	w := append([]string(nil), c.warnings...)
	sort.Strings(w)
	sort.Slice(dynamic, func(i, j int) bool {
		return pack.Topic(dynamic[i].info.Name, dynamic[i].info.Channel) < pack.Topic(dynamic[j].info.Name, dynamic[j].info.Channel)
	})
	return byExpected, dynamic, w
}

// close stops everything; safe to call once.
func (c *collector) close() {
	for _, cons := range c.consumers {
		cons.Close()
	}
	if c.cancelUDP != nil {
		c.cancelUDP()
	}
	for _, u := range c.udps {
		u.Close()
	}
	c.udpWG.Wait()
	close(c.stop)
	<-c.done
	c.mu.Lock()
	for _, t := range c.topics {
		t.reader.Close()
	}
	c.mu.Unlock()
	c.rec.Close()
}
