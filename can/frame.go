package can

import (
	"encoding/binary"
	"fmt"

	"github.com/edr-lite/edr-lite/ingest"
)

// Flags are a frame's properties besides its identifier (Frame.Flags).
type Flags uint8

const (
	// Extended: a 29-bit identifier (CAN 2.0B); otherwise 11-bit.
	Extended Flags = 1 << iota
	// RTR: a remote transmission request (classic CAN only): no data,
	// DLC is the length asked for.
	RTR
	// FD: a CAN FD frame (up to 64 data bytes).
	FD
	// BRS: bit rate switch (CAN FD only): the data phase ran faster.
	BRS
	// ESI: error state indicator (CAN FD only): the sender was error
	// passive.
	ESI
	// ErrorFrame: an error frame as the controller reports it (Linux
	// can/error.h): ID holds the error class bits, the 8 data bytes the
	// details. Error frames go to their own topic.
	ErrorFrame
	// Tx: the frame was sent by the recording node (a candump log's or
	// ASC file's transmit direction); otherwise received.
	Tx

	knownFlags = Extended | RTR | FD | BRS | ESI | ErrorFrame | Tx
)

// Identifier limits.
const (
	MaxStandardID = 0x7ff      // 11 bits
	MaxExtendedID = 0x1fffffff // 29 bits
	// MaxErrorClass bounds an error frame's ID (Linux CAN_ERR_MASK).
	MaxErrorClass = 0x1fffffff
)

// Encoded sizes of a frame (docs/can.md, "The frame encoding").
const (
	headerSize = 8
	// FrameSize is a classic frame's encoding: 8 header bytes and 8 data
	// bytes, the size of Linux's struct can_frame.
	FrameSize = headerSize + 8
	// FDFrameSize is a CAN FD frame's: 8 header bytes and 64 data bytes,
	// the size of Linux's struct canfd_frame.
	FDFrameSize = headerSize + 64
)

// Frame is one CAN or CAN FD frame. The zero Frame is a standard frame
// with ID 0 and no data.
type Frame struct {
	ID    uint32 // 11 or 29 bits (Extended); an error frame's error class
	Flags Flags
	// DLC is the data length code on the wire, 0..15. Classic CAN: the
	// length (0..8), or 9..15 for 8 bytes; an RTR frame's requested
	// length. CAN FD: the code of Len (FDLen).
	DLC uint8
	// Len is how many bytes of Data the frame carries: 0..8 (classic,
	// 0 for RTR), 0..8, 12, 16, 20, 24, 32, 48 or 64 (CAN FD).
	Len  uint8
	Data [64]byte // Data[:Len] is the payload; the rest is zero
}

// Payload returns the frame's data bytes (aliasing f).
func (f *Frame) Payload() []byte { return f.Data[:f.Len] }

// fdLens maps a CAN FD DLC to its length.
var fdLens = [16]uint8{0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64}

// FDLen returns the data length of CAN FD DLC dlc (0..15).
func FDLen(dlc uint8) uint8 { return fdLens[dlc&15] }

// FDDLC returns the CAN FD DLC of a length, and whether the length is one
// a CAN FD frame can have.
func FDDLC(n int) (uint8, bool) {
	for dlc, l := range fdLens {
		if int(l) == n {
			return uint8(dlc), true
		}
	}
	return 0, false
}

// Check reports why f is not a frame a bus can carry (the rules of
// docs/can.md, "The frame encoding"), or nil.
func (f *Frame) Check() error {
	switch {
	case f.Flags&^knownFlags != 0:
		return fmt.Errorf("%w: unknown flags %#x", ErrFrame, uint8(f.Flags&^knownFlags))
	case f.Flags&ErrorFrame != 0:
		if f.ID > MaxErrorClass || f.Flags&(Extended|RTR|FD|BRS|ESI) != 0 || f.Len != 8 || f.DLC != 8 {
			return fmt.Errorf("%w: an error frame has an error class of 29 bits, 8 data bytes and no other flag", ErrFrame)
		}
	case f.Flags&Extended == 0 && f.ID > MaxStandardID:
		return fmt.Errorf("%w: ID %#x exceeds 11 bits without the extended flag", ErrFrame, f.ID)
	case f.ID > MaxExtendedID:
		return fmt.Errorf("%w: ID %#x exceeds 29 bits", ErrFrame, f.ID)
	case f.DLC > 15:
		return fmt.Errorf("%w: DLC %d exceeds 15", ErrFrame, f.DLC)
	case f.Flags&FD != 0:
		if f.Flags&RTR != 0 {
			return fmt.Errorf("%w: a CAN FD frame has no RTR", ErrFrame)
		}
		if fdLens[f.DLC] != f.Len {
			return fmt.Errorf("%w: CAN FD DLC %d means %d bytes, not %d", ErrFrame, f.DLC, fdLens[f.DLC], f.Len)
		}
	case f.Flags&(BRS|ESI) != 0:
		return fmt.Errorf("%w: BRS and ESI are CAN FD flags", ErrFrame)
	case f.Flags&RTR != 0:
		if f.Len != 0 {
			return fmt.Errorf("%w: an RTR frame carries no data (DLC %d, %d bytes)", ErrFrame, f.DLC, f.Len)
		}
	case f.Len != min(f.DLC, 8):
		return fmt.Errorf("%w: DLC %d means %d bytes, not %d", ErrFrame, f.DLC, min(f.DLC, 8), f.Len)
	}
	for _, b := range f.Data[f.Len:] {
		if b != 0 {
			return fmt.Errorf("%w: bytes past the %d data bytes are not zero", ErrFrame, f.Len)
		}
	}
	return nil
}

// The frame encoding: a packed struct (x-edr-packed, docs/schemas.md), so
// every reader of typed topics shows it. Byte for byte (docs/can.md):
//
//	0  u32le id     the identifier (error frames: the error class)
//	4  u8    len    data bytes
//	5  u8    dlc    the DLC on the wire
//	6  u8    flags  Flags
//	7  pad 1        zero
//	8  u8    data[8] or data[64]: the data, zero past len
const (
	frameLayoutHead = "u32le id; u8 len; u8 dlc; u8 flags; pad 1\n"
	// FrameLayout is the layout of a classic frame topic (FrameSize).
	FrameLayout = frameLayoutHead + "u8 data[8]\n"
	// FDFrameLayout is the layout of a CAN FD frame topic (FDFrameSize).
	FDFrameLayout = frameLayoutHead + "u8 data[64]\n"
	// FrameTypeName and FDFrameTypeName name the two types.
	FrameTypeName   = "edr.can.Frame"
	FDFrameTypeName = "edr.can.FDFrame"
)

// FrameType is the type of a topic of classic frames; FDFrameType of a
// topic that holds CAN FD frames (and classic ones, 72 bytes each).
var (
	FrameType   = ingest.Packed(FrameTypeName, FrameLayout)
	FDFrameType = ingest.Packed(FDFrameTypeName, FDFrameLayout)
)

// IsFrameType reports whether t is FrameType or FDFrameType, and which.
func IsFrameType(t ingest.Type) (ok, fd bool) {
	switch {
	case t.Equal(FrameType):
		return true, false
	case t.Equal(FDFrameType):
		return true, true
	}
	return false, false
}

// Encode writes f's encoding to dst and returns its size: FrameSize, or
// FDFrameSize when fd (a CAN FD topic: every frame takes 72 bytes). dst
// must hold that many bytes. A CAN FD frame (or any with more than 8
// bytes) needs fd; Encode writes nothing and returns 0 otherwise. It
// allocates nothing and does not check f (Check does).
func (f *Frame) Encode(dst []byte, fd bool) int {
	n := FrameSize
	if fd {
		n = FDFrameSize
	} else if f.Len > 8 || f.Flags&FD != 0 {
		return 0
	}
	_ = dst[n-1]
	binary.LittleEndian.PutUint32(dst, f.ID)
	dst[4], dst[5], dst[6], dst[7] = f.Len, f.DLC, uint8(f.Flags), 0
	copy(dst[headerSize:n], f.Data[:n-headerSize])
	return n
}

// Decode reads a frame's encoding (FrameSize or FDFrameSize bytes) into
// f and checks it (Check). A message of another size, or one that is not
// a frame a bus carries, is an ErrFrame naming the fault.
func (f *Frame) Decode(b []byte) error {
	if len(b) != FrameSize && len(b) != FDFrameSize {
		return fmt.Errorf("%w: %d bytes, want %d or %d", ErrFrame, len(b), FrameSize, FDFrameSize)
	}
	f.ID = binary.LittleEndian.Uint32(b)
	f.Len, f.DLC, f.Flags = b[4], b[5], Flags(b[6])
	if b[7] != 0 {
		return fmt.Errorf("%w: reserved byte 7 is %#x, not 0", ErrFrame, b[7])
	}
	if int(f.Len) > len(b)-headerSize {
		return fmt.Errorf("%w: %d data bytes in a %d-byte frame", ErrFrame, f.Len, len(b))
	}
	n := copy(f.Data[:], b[headerSize:])
	clear(f.Data[n:])
	return f.Check()
}
