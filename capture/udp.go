package capture

import (
	"net/netip"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

// UDP source defaults (from internal/defaults/defaults.go).
const (
	// DefaultUDPTopic is the topic template when UDPOptions.Topic is empty.
	DefaultUDPTopic = defaults.UDPTopic
	// DefaultBatch is how many datagrams one recvmmsg call may return.
	DefaultBatch = 64
	// DefaultMaxPacket is the largest datagram kept whole (jumbo frames).
	DefaultMaxPacket = defaults.UDPMaxPacket
	// DefaultRcvBuf is the socket receive buffer asked for when
	// UDPOptions.RcvBuf is 0: room for a burst while the recorder is
	// descheduled (the kernel's usual default, 208 KiB, is not).
	DefaultRcvBuf = int(defaults.UDPRcvBuf)
	maxUDPPacket  = 65535
)

// UDPOptions configure a UDP source.
type UDPOptions struct {
	// Addr is the host:port to listen on: "0.0.0.0:30490", "[::]:7400",
	// ":30490" (IPv4 and IPv6). A multicast host ("239.1.2.3:30490",
	// "[ff15::1]:7400") binds to the group and joins it.
	Addr string
	// Interface names the interface to join a multicast group on ("" lets
	// the kernel pick by route).
	Interface string
	// Topic is the topic template (see Template); "" means
	// DefaultUDPTopic. {dst} is the datagram's destination address as the
	// kernel reports it (IP_PKTINFO); {ethertype} and {vlan} name the
	// address family and 0.
	Topic string
	// Type is the TopicInfo.Type of discovered topics: message encoding
	// and schema (the zero Type: not declared, recorded as raw bytes).
	Type ingest.Type
	// Channel is the TopicInfo.Channel of discovered topics. Two sources
	// that could name the same topic must use different channels: each
	// source writes its topics from its one Run goroutine.
	Channel string
	// RcvBuf is the socket receive buffer in bytes (0 = DefaultRcvBuf; -1
	// leaves the kernel's default). SO_RCVBUFFORCE is tried first, so with
	// CAP_NET_ADMIN it may exceed net.core.rmem_max; without it the kernel
	// caps it at net.core.rmem_max (see UDPSource.RcvBuf).
	RcvBuf int
	// Batch is how many datagrams one recvmmsg call may return (0 =
	// DefaultBatch).
	Batch int
	// MaxPacket is the largest datagram recorded (0 = DefaultMaxPacket, at
	// most 65535). Larger ones are counted in Stats.Truncated and skipped.
	// The source holds Batch*MaxPacket bytes of buffers.
	MaxPacket int
	// MaxTopics bounds the topics this source discovers (0 =
	// DefaultMaxTopics).
	MaxTopics int
	// GRO lets the kernel coalesce a flow's datagrams of equal size into
	// one receive (UDP_GRO): a NAPI NIC's GRO, or a sender's UDP_SEGMENT
	// on loopback, then costs one socket operation per up to 64
	// datagrams, which the source splits again. It needs MaxPacket 65535
	// (set when 0); a coalesced receive larger than MaxPacket would be
	// truncated.
	GRO bool
}

func (o *UDPOptions) withDefaults() (UDPOptions, Template, error) {
	c := *o
	if c.Topic == "" {
		c.Topic = DefaultUDPTopic
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.RcvBuf == 0 {
		c.RcvBuf = DefaultRcvBuf
	}
	if c.MaxPacket == 0 {
		c.MaxPacket = DefaultMaxPacket
		if c.GRO {
			c.MaxPacket = maxUDPPacket
		}
	}
	if c.Batch < 0 || c.Batch > 1024 {
		return c, Template{}, errOption("Batch", c.Batch, "want 1..1024")
	}
	if c.MaxPacket < 0 || c.MaxPacket > maxUDPPacket {
		return c, Template{}, errOption("MaxPacket", c.MaxPacket, "want 1..65535")
	}
	if c.GRO && c.MaxPacket != maxUDPPacket {
		return c, Template{}, errOption("MaxPacket", c.MaxPacket, "GRO needs 65535, the largest coalesced receive")
	}
	if c.RcvBuf < -1 {
		return c, Template{}, errOption("RcvBuf", c.RcvBuf, "want >= 0, or -1 for the kernel's default")
	}
	t, err := ParseTemplate(c.Topic)
	return c, t, err
}

// Validate checks o (with its defaults) and its address as NewUDP would,
// without opening a socket.
func (o UDPOptions) Validate() error {
	c, _, err := o.withDefaults()
	if err != nil {
		return err
	}
	if _, err := netip.ParseAddrPort(fixHost(c.Addr)); err != nil {
		return errOption("Addr", c.Addr, err.Error())
	}
	return nil
}

// fixHost turns ":port" into an address netip parses.
func fixHost(addr string) string {
	if addr != "" && addr[0] == ':' {
		return "[::]" + addr
	}
	return addr
}
