package can

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

// CAN over Ethernet: the frames capture modules (data loggers) send many
// buses' messages in, ASAM CMP and its predecessor TECMP, both on
// EtherType 0x99FE (docs/can.md, "CAN over Ethernet"). Every length and
// offset is checked against the bytes that hold it.

// EtherTypeCMP is the EtherType of ASAM CMP and TECMP.
const EtherTypeCMP = 0x99FE

// ErrEth is wrapped by every error of ParseCMP and ParseTECMP.
var ErrEth = errors.New("can: bad CAN-over-Ethernet frame")

// EthMessage is one CAN message of a CMP or TECMP frame.
type EthMessage struct {
	Device    uint16 // the capture module
	Interface uint32 // its interface (the bus)
	TimeNs    int64  // the capture module's time stamp
	Overflow  bool   // the module says it lost messages before this one
	Frame     Frame
}

// Protocol constants (ASAM CMP 1.0; TECMP 1.7).
const (
	cmpHeaderLen     = 8
	cmpMsgHeaderLen  = 16
	cmpMsgTypeData   = 0x01
	cmpPayloadCAN    = 0x01
	cmpPayloadCANFD  = 0x02
	cmpCommonSegMask = 0x0c
	cmpCommonTx      = 0x10 // dir_on_if: sent on the interface
	cmpCommonOver    = 0x20 // overflow: messages lost before
	cmpCANErrors     = 0x03ff
	cmpCANFDBRS      = 0x1000
	cmpCANFDESI      = 0x2000
	cmpIDIDE         = 0x80000000
	cmpIDRTR         = 0x40000000
	cmpID11Shift     = 18
	cmpCANHeaderLen  = 16 // flags, reserved, ID, CRC, error position, DLC, data length

	tecmpHeaderLen    = 12
	tecmpEntryLen     = 16
	tecmpMsgLogStream = 0x03
	tecmpMsgReplay    = 0x0a
	tecmpDataCAN      = 0x0002
	tecmpDataCANFD    = 0x0003
	tecmpFlagRTR      = 0x0002 // CAN; ESI for CAN FD
	tecmpFlagIDE      = 0x0004
	tecmpFlagErr      = 0x0008
	tecmpFlagBRS      = 0x0010
	tecmpFlagTx       = 0x4000
	tecmpFlagOverflow = 0x8000
)

func ethErr(off int, format string, a ...any) error {
	return fmt.Errorf("%w: offset %d: %s", ErrEth, off, fmt.Sprintf(format, a...))
}

// ParseCMP reads an ASAM CMP frame's payload (what follows the EtherType)
// and calls fn for every CAN and CAN FD data message (m valid only during
// the call). It reports the first fault with its offset in b; messages
// before it were given. Other payloads (LIN, FlexRay, Ethernet, ...) and
// other message types are skipped and counted in skipped.
func ParseCMP(b []byte, fn func(m *EthMessage)) (skipped int, err error) {
	if len(b) < cmpHeaderLen {
		return 0, ethErr(0, "a CMP header needs %d bytes, the frame has %d", cmpHeaderLen, len(b))
	}
	var m EthMessage
	m.Device = binary.BigEndian.Uint16(b[2:])
	if b[4] != cmpMsgTypeData {
		return 1, nil // control, status, vendor messages
	}
	off := cmpHeaderLen
	for len(b)-off >= cmpMsgHeaderLen {
		h := b[off:]
		ptype, plen := h[13], int(binary.BigEndian.Uint16(h[14:]))
		if ptype == 0 && plen == 0 && binary.BigEndian.Uint64(h) == 0 {
			break // Ethernet padding
		}
		if plen > len(h)-cmpMsgHeaderLen {
			return skipped, ethErr(off+14, "a payload of %d bytes, %d left in the frame", plen, len(h)-cmpMsgHeaderLen)
		}
		m.TimeNs = int64(binary.BigEndian.Uint64(h) & (1<<63 - 1))
		m.Interface = binary.BigEndian.Uint32(h[8:])
		common := h[12]
		m.Overflow = common&cmpCommonOver != 0
		p := h[cmpMsgHeaderLen : cmpMsgHeaderLen+plen]
		switch {
		case ptype != cmpPayloadCAN && ptype != cmpPayloadCANFD:
			skipped++
		case common&cmpCommonSegMask != 0:
			return skipped, ethErr(off+12, "a segmented CAN message")
		default:
			if err := cmpCAN(p, ptype == cmpPayloadCANFD, common&cmpCommonTx != 0, &m.Frame); err != nil {
				return skipped, ethErr(off+cmpMsgHeaderLen+err.off, "%s", err.msg)
			}
			fn(&m)
		}
		off += cmpMsgHeaderLen + plen
	}
	return skipped, nil
}

type offErr struct {
	off int
	msg string
}

// cmpCAN reads a CMP CAN or CAN FD payload into f.
func cmpCAN(p []byte, fd, tx bool, f *Frame) *offErr {
	if len(p) < cmpCANHeaderLen {
		return &offErr{0, fmt.Sprintf("a CAN payload needs %d bytes, it has %d", cmpCANHeaderLen, len(p))}
	}
	flags := binary.BigEndian.Uint16(p)
	idf := binary.BigEndian.Uint32(p[4:])
	dlc, n := p[14], int(p[15])
	*f = Frame{}
	if n > len(p)-cmpCANHeaderLen {
		return &offErr{15, fmt.Sprintf("a data length of %d, %d bytes left", n, len(p)-cmpCANHeaderLen)}
	}
	if idf&cmpIDIDE != 0 {
		f.ID, f.Flags = idf&MaxExtendedID, Extended
	} else {
		f.ID = idf >> cmpID11Shift & MaxStandardID
	}
	if tx {
		f.Flags |= Tx
	}
	switch {
	case flags&cmpCANErrors != 0: // an error seen on the bus
		*f = Frame{ID: errClassBusError, Flags: ErrorFrame, DLC: 8, Len: 8}
		return nil
	case dlc > 15:
		return &offErr{14, fmt.Sprintf("DLC %d exceeds 15", dlc)}
	case fd:
		if idf&cmpIDRTR != 0 {
			return &offErr{4, "a CAN FD frame with RRS set"}
		}
		if int(FDLen(dlc)) != n {
			return &offErr{14, fmt.Sprintf("CAN FD DLC %d means %d bytes, the data length is %d", dlc, FDLen(dlc), n)}
		}
		f.Flags |= FD
		if flags&cmpCANFDBRS != 0 {
			f.Flags |= BRS
		}
		if flags&cmpCANFDESI != 0 {
			f.Flags |= ESI
		}
	case idf&cmpIDRTR != 0:
		if n != 0 {
			return &offErr{15, fmt.Sprintf("an RTR frame with %d data bytes", n)}
		}
		f.Flags |= RTR
	default:
		if n != int(min(dlc, 8)) {
			return &offErr{14, fmt.Sprintf("DLC %d and %d data bytes", dlc, n)}
		}
	}
	f.DLC, f.Len = dlc, uint8(n)
	copy(f.Data[:], p[cmpCANHeaderLen:cmpCANHeaderLen+n])
	return nil
}

// AppendCMP appends an ASAM CMP data frame's payload (header and one
// message per frame of ms, all of device dev) to dst: what a capture
// module sends, for tests and replay.
func AppendCMP(dst []byte, dev uint16, seq uint16, ms []EthMessage) []byte {
	dst = append(dst, 1, 0, byte(dev>>8), byte(dev), cmpMsgTypeData, 0, byte(seq>>8), byte(seq))
	be := binary.BigEndian
	for i := range ms {
		m := &ms[i]
		f := &m.Frame
		ptype := byte(cmpPayloadCAN)
		if f.Flags&FD != 0 {
			ptype = cmpPayloadCANFD
		}
		var common byte
		if f.Flags&Tx != 0 {
			common |= cmpCommonTx
		}
		if m.Overflow {
			common |= cmpCommonOver
		}
		dst = be.AppendUint64(dst, uint64(m.TimeNs))
		dst = be.AppendUint32(dst, m.Interface)
		dst = append(dst, common, ptype)
		dst = be.AppendUint16(dst, uint16(cmpCANHeaderLen+int(f.Len)))
		var flags uint16
		if f.Flags&BRS != 0 {
			flags |= cmpCANFDBRS
		}
		if f.Flags&ESI != 0 {
			flags |= cmpCANFDESI
		}
		if f.Flags&ErrorFrame != 0 {
			flags |= 0x0200 // a bit error
		}
		idf := f.ID << cmpID11Shift
		if f.Flags&Extended != 0 {
			idf = f.ID | cmpIDIDE
		}
		if f.Flags&RTR != 0 {
			idf |= cmpIDRTR
		}
		dst = be.AppendUint16(dst, flags)
		dst = be.AppendUint16(dst, 0)
		dst = be.AppendUint32(dst, idf)
		dst = be.AppendUint32(dst, 0) // CRC not supported
		dst = be.AppendUint16(dst, 0)
		dst = append(dst, f.DLC, f.Len)
		dst = append(dst, f.Data[:f.Len]...)
	}
	return dst
}

// ParseTECMP reads a TECMP frame's payload like ParseCMP: CAN and CAN FD
// data of the log stream and replay messages.
func ParseTECMP(b []byte, fn func(m *EthMessage)) (skipped int, err error) {
	if len(b) < tecmpHeaderLen {
		return 0, ethErr(0, "a TECMP header needs %d bytes, the frame has %d", tecmpHeaderLen, len(b))
	}
	be := binary.BigEndian
	var m EthMessage
	m.Device = be.Uint16(b)
	mt, dt := b[5], be.Uint16(b[6:])
	if mt != tecmpMsgLogStream && mt != tecmpMsgReplay || dt != tecmpDataCAN && dt != tecmpDataCANFD {
		return 1, nil
	}
	fd := dt == tecmpDataCANFD
	off := tecmpHeaderLen
	for len(b)-off >= tecmpEntryLen {
		h := b[off:]
		iface, ts, n, flags := be.Uint32(h), be.Uint64(h[4:]), int(be.Uint16(h[12:])), be.Uint16(h[14:])
		if iface == 0 && ts == 0 && n == 0 {
			break // padding
		}
		if n > len(h)-tecmpEntryLen {
			return skipped, ethErr(off+12, "an entry of %d bytes, %d left in the frame", n, len(h)-tecmpEntryLen)
		}
		m.Interface, m.TimeNs = iface, int64(ts&(1<<63-1))
		m.Overflow = flags&tecmpFlagOverflow != 0
		if e := tecmpCAN(h[tecmpEntryLen:tecmpEntryLen+n], fd, flags, &m.Frame); e != nil {
			return skipped, ethErr(off+tecmpEntryLen+e.off, "%s", e.msg)
		}
		fn(&m)
		off += tecmpEntryLen + n
	}
	return skipped, nil
}

// tecmpCAN reads a TECMP CAN entry: ID (bit 31: 29-bit), length, data,
// then the CRC (ignored).
func tecmpCAN(p []byte, fd bool, flags uint16, f *Frame) *offErr {
	*f = Frame{}
	if len(p) < 5 {
		return &offErr{0, fmt.Sprintf("a CAN entry needs 5 bytes, it has %d", len(p))}
	}
	idf, n := binary.BigEndian.Uint32(p), int(p[4])
	rtr := !fd && flags&tecmpFlagRTR != 0
	if !rtr && n > len(p)-5 {
		return &offErr{4, fmt.Sprintf("a data length of %d, %d bytes left", n, len(p)-5)}
	}
	if idf&0x80000000 != 0 || flags&tecmpFlagIDE != 0 {
		f.ID, f.Flags = idf&MaxExtendedID, Extended
	} else {
		if idf&^uint32(MaxStandardID) != 0 {
			return &offErr{0, fmt.Sprintf("an 11-bit ID field %#x with other bits set", idf)}
		}
		f.ID = idf
	}
	if flags&tecmpFlagTx != 0 {
		f.Flags |= Tx
	}
	switch {
	case flags&tecmpFlagErr != 0:
		*f = Frame{ID: errClassBusError, Flags: ErrorFrame, DLC: 8, Len: 8}
		return nil
	case fd:
		dlc, ok := FDDLC(n)
		if !ok {
			return &offErr{4, fmt.Sprintf("%d data bytes: not a CAN FD length", n)}
		}
		f.Flags |= FD
		if flags&tecmpFlagBRS != 0 {
			f.Flags |= BRS
		}
		if flags&tecmpFlagRTR != 0 { // ESI in CAN FD
			f.Flags |= ESI
		}
		f.DLC = dlc
	case rtr:
		if n > 8 {
			return &offErr{4, fmt.Sprintf("an RTR asking for %d bytes", n)}
		}
		f.Flags |= RTR
		f.DLC = uint8(n)
		return nil
	default:
		if n > 8 {
			return &offErr{4, fmt.Sprintf("%d data bytes in a classic CAN frame", n)}
		}
		f.DLC = uint8(n)
	}
	f.Len = uint8(n)
	copy(f.Data[:], p[5:5+n])
	return nil
}

// AppendTECMP appends a TECMP log-stream frame's payload of one data type
// (CAN FD when the first message is) to dst, for tests and replay.
func AppendTECMP(dst []byte, dev uint16, seq uint16, ms []EthMessage) []byte {
	be := binary.BigEndian
	dt := uint16(tecmpDataCAN)
	if len(ms) > 0 && ms[0].Frame.Flags&FD != 0 {
		dt = tecmpDataCANFD
	}
	dst = be.AppendUint16(dst, dev)
	dst = be.AppendUint16(dst, seq)
	dst = append(dst, 3, tecmpMsgLogStream)
	dst = be.AppendUint16(dst, dt)
	dst = be.AppendUint16(dst, 0)
	dst = be.AppendUint16(dst, 0)
	for i := range ms {
		m := &ms[i]
		f := &m.Frame
		var flags uint16
		idf := f.ID
		if f.Flags&Extended != 0 {
			idf |= 0x80000000
			flags |= tecmpFlagIDE
		}
		if f.Flags&(RTR|ESI) != 0 {
			flags |= tecmpFlagRTR
		}
		if f.Flags&BRS != 0 {
			flags |= tecmpFlagBRS
		}
		if f.Flags&Tx != 0 {
			flags |= tecmpFlagTx
		}
		if f.Flags&ErrorFrame != 0 {
			flags |= tecmpFlagErr
		}
		if m.Overflow {
			flags |= tecmpFlagOverflow
		}
		n := f.Len
		if f.Flags&RTR != 0 {
			n = f.DLC
		}
		dst = be.AppendUint32(dst, m.Interface)
		dst = be.AppendUint64(dst, uint64(m.TimeNs))
		dst = be.AppendUint16(dst, uint16(5+int(f.Len)+2)) // ID, length, data, CRC
		dst = be.AppendUint16(dst, flags)
		dst = be.AppendUint32(dst, idf)
		dst = append(dst, n)
		dst = append(dst, f.Data[:f.Len]...)
		dst = be.AppendUint16(dst, 0) // CRC
	}
	return dst
}

// EthOptions configure an EthDecoder.
type EthOptions struct {
	// Protocol is "cmp" (ASAM CMP) or "tecmp"; "" is
	// defaults.CANProtocol.
	Protocol string
	// Source is the TopicInfo.Source of the buses' topics ("cmp:eth0").
	Source string
	// Names maps a capture module's interface (Device<<32 | Interface)
	// to a bus name; others are "DEVICE-INTERFACE" in decimal ("1-3").
	Names map[uint64]string
	// FD makes every bus a CAN FD one from the start (BusOptions.FD).
	FD bool
	// DBC decodes every bus's frames (BusOptions.DBC).
	DBC *DBC
	// PerID gives each identifier of a bus a topic (BusOptions.PerID).
	PerID bool
	// MaxBuses bounds the buses one decoder creates (0 =
	// defaults.CANMaxBuses): hostile
	// traffic cannot grow the topic table.
	MaxBuses int
}

// EthStats are an EthDecoder's counters.
type EthStats struct {
	Frames    uint64 // Ethernet frames handled
	Messages  uint64 // CAN messages in them
	Skipped   uint64 // messages of other kinds (LIN, FlexRay, status, ...)
	Malformed uint64 // frames refused (FirstError says why)
	Overflows uint64 // messages the module flagged as following a loss
	Refused   uint64 // messages of buses beyond MaxBuses or refused by the sink
	// FirstError is the first malformed frame's fault ("offset 24: ...").
	FirstError string
}

// EthDecoder turns CMP or TECMP frames into the frames of one Bus per
// capture module interface, created at its first message. Handle is
// called from one goroutine (the raw source's Run); Stats and Buses from
// any; Close once after the last Handle. Once its buses exist it
// allocates nothing per frame.
type EthDecoder struct {
	o       EthOptions
	sink    ingest.Sink
	parse   func(b []byte, fn func(m *EthMessage)) (int, error)
	fn      func(m *EthMessage)
	mu      sync.Mutex // guards buses' list for Buses
	buses   map[uint64]*Bus
	list    []*Bus
	refused map[uint64]bool
	now     int64

	frames, messages, skipped, malformed, overflows, nrefused atomic.Uint64
	firstErr                                                  atomic.Pointer[string]
}

// NewEthDecoder makes a decoder feeding sink.
func NewEthDecoder(sink ingest.Sink, o EthOptions) (*EthDecoder, error) {
	d := &EthDecoder{o: o, sink: sink, buses: map[uint64]*Bus{}, refused: map[uint64]bool{}}
	p := o.Protocol
	if p == "" {
		p = defaults.CANProtocol
	}
	switch p {
	case "cmp":
		d.parse = ParseCMP
	case "tecmp":
		d.parse = ParseTECMP
	default:
		return nil, fmt.Errorf("%w: protocol %q: want cmp or tecmp", ErrOptions, o.Protocol)
	}
	if d.o.MaxBuses <= 0 {
		d.o.MaxBuses = defaults.CANMaxBuses
	}
	d.fn = d.message
	return d, nil
}

// Handle takes one Ethernet frame's payload (after the EtherType) received
// at captureNs; frames of another EtherType are ignored. A malformed
// frame is counted (and returned); the messages before its fault are
// recorded.
func (d *EthDecoder) Handle(captureNs int64, etherType uint16, payload []byte) error {
	if etherType != EtherTypeCMP {
		return nil
	}
	inc(&d.frames)
	d.now = captureNs
	sk, err := d.parse(payload, d.fn)
	if sk > 0 {
		d.skipped.Store(d.skipped.Load() + uint64(sk))
	}
	if err != nil {
		inc(&d.malformed)
		if d.firstErr.Load() == nil {
			s := err.Error()
			d.firstErr.Store(&s)
		}
	}
	return err
}

func (d *EthDecoder) message(m *EthMessage) {
	inc(&d.messages)
	if m.Overflow {
		inc(&d.overflows)
	}
	k := uint64(m.Device)<<32 | uint64(m.Interface)
	b := d.buses[k]
	if b == nil {
		if b = d.newBus(k); b == nil {
			inc(&d.nrefused)
			return
		}
	}
	b.Record(d.now, m.TimeNs, &m.Frame)
}

func (d *EthDecoder) newBus(k uint64) *Bus {
	if d.refused[k] || len(d.buses) >= d.o.MaxBuses {
		return nil
	}
	name := d.o.Names[k]
	if name == "" {
		name = strconv.FormatUint(k>>32, 10) + "-" + strconv.FormatUint(k&0xffffffff, 10)
	}
	b, err := NewBus(d.sink, BusOptions{Name: name, Source: d.o.Source, FD: d.o.FD, DBC: d.o.DBC, PerID: d.o.PerID})
	if err != nil {
		if len(d.refused) < 4*d.o.MaxBuses {
			d.refused[k] = true
		}
		return nil
	}
	d.buses[k] = b
	d.mu.Lock()
	d.list = append(d.list, b)
	d.mu.Unlock()
	return b
}

// Buses returns the buses created so far.
func (d *EthDecoder) Buses() []*Bus {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*Bus(nil), d.list...)
}

// Stats returns the decoder's counters.
func (d *EthDecoder) Stats() EthStats {
	s := EthStats{Frames: d.frames.Load(), Messages: d.messages.Load(), Skipped: d.skipped.Load(),
		Malformed: d.malformed.Load(), Overflows: d.overflows.Load(), Refused: d.nrefused.Load()}
	if p := d.firstErr.Load(); p != nil {
		s.FirstError = *p
	}
	return s
}

// Close reports every bus's topics offline.
func (d *EthDecoder) Close() {
	for _, b := range d.Buses() {
		b.Close()
	}
}
