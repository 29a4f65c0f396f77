// The UDP source: UDPSource, its recvmmsg batch loop (read, process) and
// the parsing of each datagram's source address and control messages. The
// socket setup is in udp_socket_linux.go.

package capture

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/edr-lite/edr-lite/ingest"
	"golang.org/x/sys/unix"
)

const (
	sockaddrSize = unix.SizeofSockaddrInet6
	// udpCtrlSize holds an SO_RXQ_OVFL counter, a UDP_GRO segment size, an
	// IPv6 or IPv4 pktinfo and an SO_TIMESTAMPNS receive time (24 + 24 +
	// 40 + 32 bytes with their headers), with room to spare.
	udpCtrlSize = 160
)

// UDPSource receives UDP datagrams in batches with recvmmsg and hands each
// to the sink under the topic its template names. Run, Close and Stats may
// be called from different goroutines; only one Run at a time.
type UDPSource struct {
	opts   UDPOptions
	sink   ingest.Sink
	conn   *net.UDPConn
	rc     syscall.RawConn
	m      *mapper
	local  netip.AddrPort
	lc     lifecycle
	c      counters
	readFn func(fd uintptr) bool
	// oneTopic: the template names one topic for every datagram of the
	// socket, so the kernel's drops are that topic's losses (Sink.Lost).
	oneTopic bool
	// noName: the template needs no source address, so recvmmsg is not
	// asked for it (one copy less per datagram in the kernel).
	noName bool

	// Owned by the Run goroutine.
	msgs     []unix.Mmsghdr
	iovs     []unix.Iovec
	bufs     []byte
	names    []byte
	ctrl     []byte
	n, dirty int
	errno    syscall.Errno
	ovfl     uint32
	segSize  int   // UDP_GRO segment size of the datagram being processed, 0 = one datagram
	rxNs     int64 // the kernel's receive time of that datagram (SO_TIMESTAMPNS), 0 = none
	pkt      Packet
	batch    Stats
}

// NewUDP opens the socket described by opts (binding it, joining a
// multicast group, sizing its buffer) and returns a source that feeds sink
// once Run is called. Topics are discovered with Source "udp:<Addr>".
func NewUDP(opts UDPOptions, sink ingest.Sink) (*UDPSource, error) {
	o, tmpl, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	conn, err := openUDPSocket(&o, tmpl.has(fieldDst))
	if err != nil {
		return nil, err
	}
	s := &UDPSource{opts: o, sink: sink, conn: conn}
	if s.rc, err = conn.SyscallConn(); err != nil {
		conn.Close()
		return nil, err
	}
	s.local = conn.LocalAddr().(*net.UDPAddr).AddrPort()
	s.oneTopic = !tmpl.has(fieldSrc) && !tmpl.has(fieldSPort) && !tmpl.has(fieldDst) && !tmpl.has(fieldEtherType)
	s.noName = s.oneTopic && !tmpl.has(fieldProto) // {proto} needs the IP version, which the name gives
	s.m = newMapper(tmpl, sink, ingest.TopicInfo{Type: o.Type, Channel: o.Channel, Source: "udp:" + o.Addr}, o.MaxTopics)
	s.allocBatch()
	s.pkt = Packet{IPProto: IPProtoUDP, HasUDP: true, DstPort: s.local.Port(), Dst: s.local.Addr().Unmap().WithZone("")}
	s.readFn = s.read
	return s, nil
}

// allocBatch allocates the recvmmsg batch: Batch headers, each pointing at
// its own MaxPacket payload buffer, source-address slot (unless noName) and
// control-message slot.
func (s *UDPSource) allocBatch() {
	o := &s.opts
	s.msgs = make([]unix.Mmsghdr, o.Batch)
	s.iovs = make([]unix.Iovec, o.Batch)
	s.bufs = make([]byte, o.Batch*o.MaxPacket)
	s.names = make([]byte, o.Batch*sockaddrSize)
	s.ctrl = make([]byte, o.Batch*udpCtrlSize)
	for i := range s.msgs {
		s.iovs[i].Base = &s.bufs[i*o.MaxPacket]
		s.iovs[i].SetLen(o.MaxPacket)
		h := &s.msgs[i].Hdr
		if !s.noName {
			h.Name = &s.names[i*sockaddrSize]
			h.Namelen = sockaddrSize
		}
		h.Iov = &s.iovs[i]
		h.SetIovlen(1)
		h.Control = &s.ctrl[i*udpCtrlSize]
		h.SetControllen(udpCtrlSize)
	}
}

// LocalAddr returns the address the socket is bound to (with the port the
// kernel chose for port 0).
func (s *UDPSource) LocalAddr() netip.AddrPort { return s.local }

// Stats returns the source's counters. Safe to call at any time.
func (s *UDPSource) Stats() Stats { return s.c.stats() }

// Run receives until ctx is done (returning ctx.Err()) or Close is called
// (returning nil). A socket error ends Run with that error.
func (s *UDPSource) Run(ctx context.Context) error {
	return s.lc.runLoop(ctx, s.conn, s.rc, s.readFn, "udp "+s.opts.Addr, s.process)
}

// read is the RawConn.Read callback: one non-blocking recvmmsg. It returns
// false when nothing is queued, so the runtime poller waits.
func (s *UDPSource) read(fd uintptr) bool {
	namelen := uint32(sockaddrSize)
	if s.noName {
		namelen = 0
	}
	for i := range s.dirty { // the kernel rewrote these lengths last time
		h := &s.msgs[i].Hdr
		h.Namelen = namelen
		h.SetControllen(udpCtrlSize)
		h.Flags = 0
	}
	s.dirty = 0
	for {
		n, errno := recvmmsg(fd, s.msgs, unix.MSG_DONTWAIT)
		switch errno {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		s.n, s.errno = n, errno
		if errno == 0 {
			s.dirty = n
		}
		return true
	}
}

// process ingests the datagrams of the last batch, each stamped with the
// kernel's receive time (SO_TIMESTAMPNS), or, when the kernel gave none,
// with one reading of the recorder's clock taken after the batch was
// received: a capture time is never earlier than the datagram's arrival.
func (s *UDPSource) process() error {
	if s.errno != 0 {
		return fmt.Errorf("recvmmsg: %w", s.errno)
	}
	now := s.sink.Now()
	b := &s.batch
	maxp := s.opts.MaxPacket
	for i := range s.n {
		h := &s.msgs[i]
		n := int(h.Len)
		b.Packets++
		b.Bytes += uint64(n)
		s.parseControl(s.ctrl[i*udpCtrlSize : i*udpCtrlSize+int(h.Hdr.Controllen)])
		at := now
		if s.rxNs != 0 {
			at = s.rxNs
		}
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			b.Truncated++
			continue
		}
		if !s.noName {
			s.parseName(s.names[i*sockaddrSize : (i+1)*sockaddrSize])
		}
		buf := s.bufs[i*maxp : i*maxp+n]
		if s.segSize > 0 && n > s.segSize { // coalesced by GRO: equal segments, the last may be short
			b.Packets += uint64((n - 1) / s.segSize)
			for len(buf) > s.segSize {
				s.pkt.Payload = buf[:s.segSize]
				deliver(s.m, &s.pkt, at, s.pkt.Payload, b)
				buf = buf[s.segSize:]
			}
		}
		s.pkt.Payload = buf
		deliver(s.m, &s.pkt, at, buf, b)
	}
	s.pkt.Payload = nil
	if b.Lost > 0 && s.oneTopic {
		if id, ok := s.m.lookup(&s.pkt); ok { // the socket's one topic, known once a datagram named it
			s.sink.Lost(id, now, b.Lost)
		}
	}
	s.c.add(b, s.m)
	return nil
}

func (s *UDPSource) parseName(name []byte) {
	p := &s.pkt
	p.SrcPort = binary.BigEndian.Uint16(name[2:4])
	switch binary.NativeEndian.Uint16(name[0:2]) {
	case unix.AF_INET:
		p.Src = netip.AddrFrom4([4]byte(name[4:8]))
	case unix.AF_INET6:
		p.Src = netip.AddrFrom16([16]byte(name[8:24])).Unmap()
	}
	if p.Src.Is4() {
		p.IPVersion, p.EtherType = 4, EtherTypeIPv4
	} else {
		p.IPVersion, p.EtherType = 6, EtherTypeIPv6
	}
}

var (
	cmsgHdrLen  = unix.CmsgLen(0)
	cmsgAlign   = unix.CmsgSpace(1) - unix.CmsgLen(0)
	cmsgLenSize = unix.SizeofCmsghdr - 8 // cmsg_len is a size_t
)

// parseControl reads the control messages of one datagram: the socket's
// drop counter (SO_RXQ_OVFL, absent while it is zero), the GRO segment
// size (UDP_GRO), the destination address (IP_PKTINFO / IPV6_PKTINFO) and
// the receive time (SO_TIMESTAMPNS: the 64-bit layout of _NEW, or _OLD's
// native timespec).
func (s *UDPSource) parseControl(c []byte) {
	s.segSize, s.rxNs = 0, 0
	for len(c) >= cmsgHdrLen {
		var l int
		if cmsgLenSize == 8 {
			l = int(binary.NativeEndian.Uint64(c))
		} else {
			l = int(binary.NativeEndian.Uint32(c))
		}
		if l < cmsgHdrLen || l > len(c) {
			return
		}
		level := int32(binary.NativeEndian.Uint32(c[cmsgLenSize:]))
		typ := int32(binary.NativeEndian.Uint32(c[cmsgLenSize+4:]))
		data := c[cmsgHdrLen:l]
		switch {
		case level == unix.SOL_SOCKET && typ == unix.SO_RXQ_OVFL && len(data) >= 4:
			v := binary.NativeEndian.Uint32(data)
			s.batch.Lost += uint64(v - s.ovfl) // cumulative, wraps at 2^32
			s.ovfl = v
		case level == unix.SOL_SOCKET && (typ == unix.SO_TIMESTAMPNS_NEW || typ == unix.SO_TIMESTAMPNS_OLD):
			switch {
			case len(data) >= 16: // __kernel_timespec, or timespec on 64-bit
				s.rxNs = int64(binary.NativeEndian.Uint64(data))*1e9 + int64(binary.NativeEndian.Uint64(data[8:]))
			case len(data) >= 8: // timespec with 32-bit fields (_OLD on 32-bit)
				s.rxNs = int64(int32(binary.NativeEndian.Uint32(data)))*1e9 + int64(int32(binary.NativeEndian.Uint32(data[4:])))
			}
		case level == unix.SOL_UDP && typ == unix.UDP_GRO && len(data) >= 4:
			s.segSize = int(int32(binary.NativeEndian.Uint32(data)))
		case level == unix.IPPROTO_IP && typ == unix.IP_PKTINFO && len(data) >= 12:
			s.pkt.Dst = netip.AddrFrom4([4]byte(data[8:12]))
		case level == unix.IPPROTO_IPV6 && typ == unix.IPV6_PKTINFO && len(data) >= 16:
			s.pkt.Dst = netip.AddrFrom16([16]byte(data[0:16])).Unmap()
		}
		next := (l + cmsgAlign - 1) &^ (cmsgAlign - 1)
		if next >= len(c) {
			return
		}
		c = c[next:]
	}
}

// Close stops Run, closes the socket and reports every discovered topic
// offline. It is safe to call more than once.
func (s *UDPSource) Close() error {
	var err error
	if s.lc.close(func() { err = s.conn.Close() }) {
		s.m.offline()
	}
	return err
}
