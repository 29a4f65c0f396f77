package capture

import (
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// PayloadMode says which bytes of a captured frame are recorded.
type PayloadMode uint8

const (
	// PayloadFrame records the whole frame from the Ethernet header on.
	PayloadFrame PayloadMode = iota
	// PayloadUDP records the UDP payload only; frames that are not UDP
	// are counted in Stats.Unmapped and skipped.
	PayloadUDP
)

// Raw source defaults.
const (
	// DefaultRawTopic is the topic template when RawOptions.Topic is empty.
	DefaultRawTopic = "eth/{ethertype}"
	// DefaultBlockSize is the size of one TPACKET_V3 ring block.
	DefaultBlockSize = 1 << 20
	// DefaultBlocks is the number of ring blocks.
	DefaultBlocks = 4
	// DefaultBlockTimeout is how long the kernel fills a block before
	// handing it over part-full.
	DefaultBlockTimeout = 10 * time.Millisecond
)

// FrameHandler takes the frames of a raw source whose protocol carries
// many messages per frame (CAN over Ethernet: package can's EthDecoder),
// instead of the topic template: it finds its own topics on the sink.
// HandleFrame is called from the source's Run goroutine for every frame
// that passed the filter and parsed (p and its bytes valid only during
// the call, captureNs the kernel's receive time); Close once, by the
// source's Close, after the last HandleFrame.
type FrameHandler interface {
	HandleFrame(captureNs int64, p *Packet)
	Close()
}

// RawOptions configure a raw AF_PACKET source.
type RawOptions struct {
	// Interface is the network interface to capture on ("eth0"); required.
	Interface string
	// Topic is the topic template (see Template); "" means
	// DefaultRawTopic. Useful ones: "someip/{dport}", "udp/{dst}:{dport}".
	Topic string
	// Type is the TopicInfo.Type of discovered topics: message encoding
	// and schema (the zero Type: not declared, recorded as raw bytes).
	Type ingest.Type
	// Channel is the TopicInfo.Channel of discovered topics. Two sources
	// that could name the same topic must use different channels: each
	// source writes its topics from its one Run goroutine.
	Channel string
	// Payload selects the bytes recorded per frame.
	Payload PayloadMode
	// Promiscuous puts the interface in promiscuous mode while the source
	// is open (frames not addressed to this host are captured too).
	Promiscuous bool
	// Outgoing also captures frames this host sends on the interface
	// (by default only received frames are).
	Outgoing bool
	// Filter, when not nil, is compiled to an eBPF socket filter so that
	// non-matching frames are dropped in the kernel.
	Filter *Filter
	// BlockSize is the ring block size in bytes, a multiple of the page
	// size (0 = DefaultBlockSize). It bounds the largest frame captured.
	BlockSize int
	// Blocks is the number of ring blocks (0 = DefaultBlocks). The ring
	// holds BlockSize*Blocks bytes, mapped once at NewRaw.
	Blocks int
	// BlockTimeout is how long the kernel waits before handing over a
	// part-full block (0 = DefaultBlockTimeout; at least 1ms). It bounds
	// the delay between a frame's arrival and its ingestion at low rates.
	// Each timeout hands over a block however little it holds, so a Run
	// that stalls for Blocks*BlockTimeout at a low rate fills the ring
	// with part-full blocks and the kernel drops (Stats.Lost) the rest.
	BlockTimeout time.Duration
	// MaxTopics bounds the topics this source discovers (0 =
	// DefaultMaxTopics).
	MaxTopics int
	// Frames, when set, takes every frame instead of the topic template
	// (Topic, Type, Channel and Payload are then unused): the source
	// counts packets and bytes, the handler its own messages.
	Frames FrameHandler
}

func (o *RawOptions) withDefaults(pageSize int) (RawOptions, Template, error) {
	c := *o
	if c.Topic == "" {
		c.Topic = DefaultRawTopic
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.Blocks == 0 {
		c.Blocks = DefaultBlocks
	}
	if c.BlockTimeout == 0 {
		c.BlockTimeout = DefaultBlockTimeout
	}
	switch {
	case c.Interface == "":
		return c, Template{}, errOption("Interface", `""`, "an interface name is required")
	case c.BlockSize < pageSize || c.BlockSize%pageSize != 0 || c.BlockSize > 1<<30:
		return c, Template{}, errOption("BlockSize", c.BlockSize, "want a multiple of the page size, at most 1 GiB")
	case c.Blocks < 1 || c.Blocks > 1<<16:
		return c, Template{}, errOption("Blocks", c.Blocks, "want 1..65536")
	case c.BlockTimeout < time.Millisecond || c.BlockTimeout > time.Minute:
		return c, Template{}, errOption("BlockTimeout", c.BlockTimeout, "want 1ms..1m")
	case c.Payload > PayloadUDP:
		return c, Template{}, errOption("Payload", c.Payload, "want PayloadFrame or PayloadUDP")
	}
	t, err := ParseTemplate(c.Topic)
	return c, t, err
}
