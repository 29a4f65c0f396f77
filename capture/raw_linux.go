package capture

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"golang.org/x/sys/unix"
)

// tpacket3_hdr field offsets (linux/if_packet.h), native byte order.
const (
	tp3NextOffset = 0
	tp3Sec        = 4
	tp3Nsec       = 8
	tp3Snaplen    = 12
	tp3Len        = 16
	tp3Status     = 20
	tp3Mac        = 24
	tp3VLANTCI    = 32
	tp3HdrLen     = 48 // TPACKET_ALIGN(sizeof(struct tpacket3_hdr))
	sllPkttype    = tp3HdrLen + 10
	// tpacket_block_desc.hdr.bh1 fields.
	blkNumPkts    = 12
	blkFirstPkt   = 16
	blkLen        = 20
	blockDescSize = 48
)

// RawSource captures frames from a network interface through an AF_PACKET
// socket with a mmap'd TPACKET_V3 ring: the kernel fills blocks of frames
// and hands each block over whole, so a wakeup delivers many frames.
// Capture times are the kernel's receive timestamps. Run, Close and Stats
// may be called from different goroutines; only one Run at a time.
type RawSource struct {
	opts    RawOptions
	sink    ingest.Sink
	file    *os.File
	rc      syscall.RawConn
	ring    []byte
	m       *mapper
	lc      lifecycle
	c       counters
	statsMu sync.Mutex // serialises PACKET_STATISTICS reads, which reset the kernel's counters
	readFn  func(fd uintptr) bool

	// Owned by the Run goroutine.
	cur   int
	pkt   Packet
	batch Stats
}

// NewRaw opens an AF_PACKET socket on opts.Interface, attaches the filter,
// maps the ring and binds; frames arrive once Run is called (the kernel
// buffers up to the ring's size meanwhile). Topics are discovered with
// Source "raw:<Interface>". Needs CAP_NET_RAW (and CAP_BPF or root for a
// Filter); the error then wraps syscall.EPERM.
func NewRaw(opts RawOptions, sink ingest.Sink) (*RawSource, error) {
	o, tmpl, err := opts.withDefaults(os.Getpagesize())
	if err != nil {
		return nil, err
	}
	ifi, err := net.InterfaceByName(o.Interface)
	if err != nil {
		return nil, fmt.Errorf("capture: raw: %w", err)
	}
	// Protocol 0 receives nothing until bind, so no frame slips past the
	// filter while the socket is being set up.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("capture: raw %s: socket(AF_PACKET): %w", o.Interface, err)
	}
	s := &RawSource{opts: o, sink: sink}
	if err := s.setup(fd, ifi.Index); err != nil {
		if s.ring != nil {
			err = errors.Join(err, unix.Munmap(s.ring))
		}
		unix.Close(fd)
		return nil, fmt.Errorf("capture: raw %s: %w", o.Interface, err)
	}
	s.file = os.NewFile(uintptr(fd), "packet:"+o.Interface)
	if s.rc, err = s.file.SyscallConn(); err != nil {
		s.file.Close()
		unix.Munmap(s.ring)
		return nil, err
	}
	s.m = newMapper(tmpl, sink, ingest.TopicInfo{Type: o.Type, Channel: o.Channel, Source: "raw:" + o.Interface}, o.MaxTopics)
	s.readFn = func(uintptr) bool { return blockStatus(s.block(s.cur))&unix.TP_STATUS_USER != 0 }
	return s, nil
}

func (s *RawSource) setup(fd, ifindex int) error {
	o := &s.opts
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fmt.Errorf("PACKET_VERSION TPACKET_V3: %w", err)
	}
	if !o.Outgoing {
		// Best effort (Linux 4.20+); outgoing frames are also skipped by
		// their packet type.
		_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	}
	if o.Filter != nil {
		if err := attachFilter(fd, o.Filter); err != nil {
			return err
		}
	}
	req := unix.TpacketReq3{
		Block_size:     uint32(o.BlockSize),
		Block_nr:       uint32(o.Blocks),
		Frame_size:     unix.TPACKET_ALIGNMENT << 7, // 2048: only a sanity bound for V3
		Retire_blk_tov: uint32(o.BlockTimeout / time.Millisecond),
	}
	req.Frame_nr = req.Block_size / req.Frame_size * req.Block_nr
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("PACKET_RX_RING %d x %d: %w", o.Blocks, o.BlockSize, err)
	}
	ring, err := unix.Mmap(fd, 0, o.BlockSize*o.Blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap ring: %w", err)
	}
	s.ring = ring
	if o.Promiscuous {
		mr := unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_PROMISC}
		if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mr); err != nil {
			return fmt.Errorf("promiscuous mode: %w", err)
		}
	}
	sa := unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}
	if err := unix.Bind(fd, &sa); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (s *RawSource) block(i int) []byte {
	bs := s.opts.BlockSize
	return s.ring[i*bs : (i+1)*bs]
}

// Stats returns the source's counters, first folding in the kernel's
// PACKET_STATISTICS (packets that passed the filter, and ring-full drops,
// which become Lost). Safe to call at any time.
func (s *RawSource) Stats() Stats {
	s.pollKernelStats()
	return s.c.stats()
}

func (s *RawSource) pollKernelStats() {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	var st *unix.TpacketStatsV3
	err := s.rc.Control(func(fd uintptr) {
		st, _ = unix.GetsockoptTpacketStatsV3(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS)
	})
	if err != nil || st == nil { // closed: the last figures were read by Close
		return
	}
	s.c.kernelPackets.Add(uint64(st.Packets))
	s.c.lost.Add(uint64(st.Drops))
}

// Run captures until ctx is done (returning ctx.Err()) or Close is called
// (returning nil).
func (s *RawSource) Run(ctx context.Context) error {
	return s.lc.runLoop(ctx, s.file, s.rc, s.readFn, "raw "+s.opts.Interface, s.drain)
}

// drain ingests every block the kernel has handed over, in ring order.
func (s *RawSource) drain() error {
	for s.drainBlock() {
	}
	return nil
}

// drainBlock ingests the next block if the kernel has handed it over.
func (s *RawSource) drainBlock() bool {
	blk := s.block(s.cur)
	if blockStatus(blk)&unix.TP_STATUS_USER == 0 {
		return false
	}
	s.processBlock(blk)
	releaseBlock(blk)
	s.cur = (s.cur + 1) % s.opts.Blocks
	s.c.add(&s.batch, s.m)
	return true
}

// processBlock ingests the frames of one block. The kernel wrote it, but
// every offset is still checked against the block before use.
func (s *RawSource) processBlock(blk []byte) {
	ne := binary.NativeEndian
	b := &s.batch
	num := ne.Uint32(blk[blkNumPkts:])
	off := int(ne.Uint32(blk[blkFirstPkt:]))
	end := min(int(ne.Uint32(blk[blkLen:])), len(blk))
	for range num {
		if off < blockDescSize || off+sllPkttype+1 > end {
			b.Malformed++
			return
		}
		h := blk[off:end]
		next := int(ne.Uint32(h[tp3NextOffset:]))
		snap := int(ne.Uint32(h[tp3Snaplen:]))
		mac := int(ne.Uint16(h[tp3Mac:]))
		if mac+snap > len(h) {
			b.Malformed++
			return
		}
		b.Packets++
		b.Bytes += uint64(snap)
		switch {
		case !s.opts.Outgoing && h[sllPkttype] == unix.PACKET_OUTGOING:
			b.Packets--
			b.Bytes -= uint64(snap)
		case int(ne.Uint32(h[tp3Len:])) > snap:
			b.Truncated++
		default:
			s.frame(h, h[mac:mac+snap], b)
		}
		if next == 0 {
			return
		}
		off += next
	}
}

func (s *RawSource) frame(h, frame []byte, b *Stats) {
	ne := binary.NativeEndian
	p := &s.pkt
	if ParseFrame(frame, p) != nil {
		b.Malformed++
		return
	}
	if !p.HasVLAN && ne.Uint32(h[tp3Status:])&unix.TP_STATUS_VLAN_VALID != 0 {
		p.HasVLAN, p.VLAN = true, uint16(ne.Uint32(h[tp3VLANTCI:]))&0x0fff
	}
	if s.opts.Frames != nil {
		s.opts.Frames.HandleFrame(int64(ne.Uint32(h[tp3Sec:]))*1e9+int64(ne.Uint32(h[tp3Nsec:])), p)
		b.Ingested++
		*p = Packet{}
		return
	}
	payload := frame
	if s.opts.Payload == PayloadUDP {
		if !p.HasUDP {
			b.Unmapped++
			return
		}
		payload = p.Payload
	}
	ts := int64(ne.Uint32(h[tp3Sec:]))*1e9 + int64(ne.Uint32(h[tp3Nsec:]))
	deliver(s.m, p, ts, payload, b)
	*p = Packet{}
}

// Close stops Run, reads the kernel's final statistics, closes the socket,
// unmaps the ring and reports every discovered topic offline. It is safe to
// call more than once.
func (s *RawSource) Close() error {
	var err error
	first := s.lc.close(func() {
		s.pollKernelStats()
		s.statsMu.Lock()
		err = s.file.Close()
		s.statsMu.Unlock()
	})
	if first {
		err = errors.Join(err, unix.Munmap(s.ring))
		s.m.offline()
		if s.opts.Frames != nil {
			s.opts.Frames.Close()
		}
	}
	return err
}
