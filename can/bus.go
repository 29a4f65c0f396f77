package can

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

// Linux error classes (can/error.h) a Bus counts apart.
const (
	ErrClassBusOff    = 0x00000040 // CAN_ERR_BUSOFF: the controller went bus-off
	ErrClassRestarted = 0x00000100 // CAN_ERR_RESTARTED: it restarted after bus-off
)

// BusOptions configure a Bus.
type BusOptions struct {
	// Name is the bus's name ("can0", "cmp:eth0/3"); required.
	Name string
	// Topic is the topic of its frames; "" is defaults.CANTopicPrefix +
	// Name. Error frames go to Topic + defaults.CANErrorSuffix, decoded
	// DBC messages to Topic + "/" + the message's name.
	Topic string
	// Source is the TopicInfo.Source of its topics ("socketcan:can0",
	// "cmp:eth0", "candump:FILE").
	Source string
	// Channel is the TopicInfo.Channel of its topics.
	Channel string
	// FD types the frame topic as CAN FD (FDFrameType) from the start.
	// Otherwise it is FrameType until the first CAN FD frame, which
	// rediscovers it as FDFrameType (a type change the recorder keeps):
	// a classic bus costs 16 bytes a frame, not 72.
	FD bool
	// DBC, when set, decodes the frames it knows into one typed topic per
	// message (Topic/NAME), as they are recorded (docs/can.md, "DBC").
	DBC *DBC
	// PerID records each identifier's frames on a topic of its own,
	// Topic/0x123 (29-bit: Topic/0x1ABCDEF0x), instead of Topic: at most
	// MaxIDTopics of them; frames of further IDs are refused, counted.
	PerID bool
}

// MaxIDTopics bounds the per-ID topics of a bus (BusOptions.PerID).
const MaxIDTopics = defaults.CANMaxIDTopics

// IDTopic is the per-ID topic of frames with identifier id on a bus whose
// frames are topic: topic + "/0x123", "/0x1ABCDEF0x" for a 29-bit one.
func IDTopic(topic string, id uint32, extended bool) string {
	if extended {
		return fmt.Sprintf("%s/0x%08Xx", topic, id)
	}
	return fmt.Sprintf("%s/0x%03X", topic, id)
}

// idTopic is one identifier's topic of a PerID bus.
type idTopic struct {
	id ingest.TopicID
	ok bool
	fd bool
}

// BusStats are a bus's counters since NewBus (docs/can.md,
// "Accounting").
type BusStats struct {
	Frames      uint64 // frames recorded or offered (error frames apart)
	ErrorFrames uint64
	BusOff      uint64 // error frames of class bus-off
	Restarts    uint64 // error frames of class restarted
	Rejected    uint64 // frames the recorder refused (topic excluded, oversize)
	Lost        uint64 // frames lost before the bus saw them (kernel drops), as the source says
	// Decoded counts DBC messages decoded (Messages: per message name);
	// Unknown the frames no DBC message has the ID of, Short those
	// shorter than their message. UnknownIDs and ShortIDs name the first
	// few distinct IDs of each (29-bit ones with bit 31 set).
	Decoded, Unknown, Short uint64
	UnknownIDs, ShortIDs    []uint32
	Messages                map[string]uint64
}

// Bus is the shared frame path: every source (SocketCAN, CAN over
// Ethernet, a candump log or ASC file) hands it frames, which it records
// on the bus's topics of the sink, decoding them by DBC when one is set.
// Record allocates nothing once a topic is discovered.
//
// Record and Lost are called from one goroutine (the source's); Stats
// from any; Close after the last Record.
type Bus struct {
	o    BusOptions
	sink ingest.Sink

	frames   ingest.TopicID
	fd       bool
	errID    ingest.TopicID
	errOK    bool
	errTried bool
	buf      [FDFrameSize]byte
	dec      *busDecoder
	ids      map[uint32]*idTopic // PerID: by key(id, extended)
	idList   []ingest.TopicID

	// counters: written by the Record goroutine only (Load+Store, no
	// locked instruction), read by Stats.
	nFrames, nErrors, nBusOff, nRestarts, nRejected, nLost atomic.Uint64

	closeOnce sync.Once
}

// NewBus discovers the bus's frame topic on sink (typed FrameType, or
// FDFrameType with opts.FD). A topic the sink refuses is an error.
func NewBus(sink ingest.Sink, opts BusOptions) (*Bus, error) {
	if opts.Name == "" {
		return nil, fmt.Errorf("%w: a bus needs a name", ErrOptions)
	}
	if opts.Topic == "" {
		opts.Topic = defaults.CANTopicPrefix + opts.Name
	}
	b := &Bus{o: opts, sink: sink, fd: opts.FD}
	typ := FrameType
	if b.fd {
		typ = FDFrameType
	}
	if opts.PerID {
		b.ids = map[uint32]*idTopic{}
	} else {
		id, err := sink.Discover(b.info(opts.Topic, typ))
		if err != nil {
			return nil, fmt.Errorf("can: bus %s: topic %s: %w", opts.Name, opts.Topic, err)
		}
		b.frames = id
	}
	if opts.DBC != nil {
		b.dec = newBusDecoder(b, opts.DBC)
	}
	return b, nil
}

func (b *Bus) info(topic string, typ ingest.Type) ingest.TopicInfo {
	return ingest.TopicInfo{Name: topic, Channel: b.o.Channel, Type: typ, Source: b.o.Source}
}

// Topic returns the topic of the bus's frames.
func (b *Bus) Topic() string { return b.o.Topic }

// ErrorTopic returns the topic of the bus's error frames.
func (b *Bus) ErrorTopic() string { return b.o.Topic + defaults.CANErrorSuffix }

// Name returns the bus's name.
func (b *Bus) Name() string { return b.o.Name }

// Channel returns the channel of the bus's topics.
func (b *Bus) Channel() string { return b.o.Channel }

// PerID reports whether each identifier has a topic of its own
// (IDTopic of Topic).
func (b *Bus) PerID() bool { return b.o.PerID }

// DBC returns the DBC the bus decodes its frames by, nil for none.
func (b *Bus) DBC() *DBC { return b.o.DBC }

func inc(c *atomic.Uint64) { c.Store(c.Load() + 1) }

// Record records frame f captured at captureNs (producer time genNs, 0
// when unknown): on the error topic for an error frame, else on the frame
// topic and, when the bus has a DBC that knows its ID, decoded on the
// message's topic. f must pass Check (the parsers of this package make
// only such frames). It reports whether the sink stored the frame.
func (b *Bus) Record(captureNs, genNs int64, f *Frame) bool {
	if f.Flags&ErrorFrame != 0 {
		return b.recordError(captureNs, genNs, f)
	}
	inc(&b.nFrames)
	var ok bool
	if b.ids != nil {
		ok = b.recordPerID(captureNs, genNs, f)
	} else {
		if !b.fd && (f.Flags&FD != 0 || f.Len > 8) {
			b.upgrade()
		}
		n := f.Encode(b.buf[:], b.fd)
		ok = b.sink.IngestAt(b.frames, captureNs, genNs, b.buf[:n])
	}
	if !ok {
		inc(&b.nRejected)
	}
	if b.dec != nil {
		b.dec.record(captureNs, genNs, f)
	}
	return ok
}

// recordPerID records f on its identifier's topic, discovered at its
// first frame (and rediscovered as CAN FD at its first CAN FD frame).
func (b *Bus) recordPerID(captureNs, genNs int64, f *Frame) bool {
	ext := f.Flags&Extended != 0
	k := key(f.ID, ext)
	t := b.ids[k]
	if t == nil {
		if len(b.ids) >= MaxIDTopics {
			return false
		}
		t = &idTopic{fd: b.o.FD}
		typ := FrameType
		if t.fd {
			typ = FDFrameType
		}
		id, err := b.sink.Discover(b.info(IDTopic(b.o.Topic, f.ID, ext), typ))
		t.id, t.ok = id, err == nil
		b.ids[k] = t
		if t.ok {
			b.idList = append(b.idList, id)
		}
	}
	if !t.ok {
		return false
	}
	if !t.fd && (f.Flags&FD != 0 || f.Len > 8) {
		if id, err := b.sink.Discover(b.info(IDTopic(b.o.Topic, f.ID, ext), FDFrameType)); err == nil {
			t.id = id
		}
		t.fd = true
	}
	n := f.Encode(b.buf[:], t.fd)
	return b.sink.IngestAt(t.id, captureNs, genNs, b.buf[:n])
}

// upgrade rediscovers the frame topic as CAN FD (once).
func (b *Bus) upgrade() {
	if id, err := b.sink.Discover(b.info(b.o.Topic, FDFrameType)); err == nil {
		b.frames = id
	}
	b.fd = true
}

func (b *Bus) recordError(captureNs, genNs int64, f *Frame) bool {
	inc(&b.nErrors)
	if f.ID&ErrClassBusOff != 0 {
		inc(&b.nBusOff)
	}
	if f.ID&ErrClassRestarted != 0 {
		inc(&b.nRestarts)
	}
	if !b.errTried {
		b.errTried = true
		id, err := b.sink.Discover(b.info(b.ErrorTopic(), FrameType))
		b.errID, b.errOK = id, err == nil
	}
	if !b.errOK {
		inc(&b.nRejected)
		return false
	}
	n := f.Encode(b.buf[:], false)
	if !b.sink.IngestAt(b.errID, captureNs, genNs, b.buf[:n]) {
		inc(&b.nRejected)
		return false
	}
	return true
}

// Lost reports n frames of the bus lost before they reached it (the
// kernel dropped them), found at atNs: counted, and reported to the sink
// as losses of the frame topic.
func (b *Bus) Lost(atNs int64, n uint64) {
	if n == 0 {
		return
	}
	b.nLost.Store(b.nLost.Load() + n)
	if b.ids == nil { // per-ID topics: the kernel does not say whose frames it dropped
		b.sink.Lost(b.frames, atNs, n)
	}
}

// Stats returns the bus's counters.
func (b *Bus) Stats() BusStats {
	s := BusStats{Frames: b.nFrames.Load(), ErrorFrames: b.nErrors.Load(), BusOff: b.nBusOff.Load(),
		Restarts: b.nRestarts.Load(), Rejected: b.nRejected.Load(), Lost: b.nLost.Load()}
	if b.dec != nil {
		b.dec.stats(&s)
	}
	return s
}

// Close reports the bus's topics offline. Call it once its source has
// stopped calling Record.
func (b *Bus) Close() {
	b.closeOnce.Do(func() {
		if b.ids == nil {
			b.sink.Offline(b.frames)
		}
		for _, id := range b.idList {
			b.sink.Offline(id)
		}
		if b.errOK {
			b.sink.Offline(b.errID)
		}
		if b.dec != nil {
			b.dec.offline()
		}
	})
}
