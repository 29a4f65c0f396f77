package can

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Linux's struct can_frame / canfd_frame (linux/can.h): the bytes a
// CAN_RAW socket reads, in the host's byte order.
const (
	LinuxMTU     = 16 // CAN_MTU
	LinuxFDMTU   = 72 // CANFD_MTU
	linuxEFF     = 0x80000000
	linuxRTR     = 0x40000000
	linuxERR     = 0x20000000
	linuxFDBRS   = 0x01
	linuxFDESI   = 0x02
	linuxFDFDF   = 0x04
	linuxLen8DLC = 7 // offset of len8_dlc in can_frame
)

// FromLinux reads a frame as a CAN_RAW socket gives it (LinuxMTU bytes:
// can_frame, LinuxFDMTU: canfd_frame) into f, checking it. It is the
// parsing the SocketCAN source shares with the tests (this machine's
// kernel may lack AF_CAN).
func FromLinux(b []byte, f *Frame) error {
	if len(b) != LinuxMTU && len(b) != LinuxFDMTU {
		return fmt.Errorf("%w: %d bytes from the socket, want %d or %d", ErrFrame, len(b), LinuxMTU, LinuxFDMTU)
	}
	id := binary.NativeEndian.Uint32(b)
	n := int(b[4])
	*f = Frame{}
	switch {
	case id&linuxERR != 0:
		f.ID, f.Flags = id&MaxErrorClass, ErrorFrame
		f.DLC, f.Len = 8, 8
		copy(f.Data[:8], b[8:16])
		return f.Check()
	case id&linuxEFF != 0:
		f.ID, f.Flags = id&MaxExtendedID, Extended
	default:
		f.ID = id & MaxStandardID
		if id&^uint32(linuxRTR|MaxStandardID) != 0 {
			return fmt.Errorf("%w: an 11-bit ID field %#x with other bits set", ErrFrame, id)
		}
	}
	if len(b) == LinuxFDMTU {
		dlc, ok := FDDLC(n)
		if !ok {
			return fmt.Errorf("%w: a CAN FD frame of %d bytes", ErrFrame, n)
		}
		f.Flags |= FD
		if b[5]&linuxFDBRS != 0 {
			f.Flags |= BRS
		}
		if b[5]&linuxFDESI != 0 {
			f.Flags |= ESI
		}
		f.DLC, f.Len = dlc, uint8(n)
		copy(f.Data[:n], b[8:8+n])
		return f.Check()
	}
	if n > 8 {
		return fmt.Errorf("%w: a classic frame of %d bytes", ErrFrame, n)
	}
	f.DLC = uint8(n)
	if n == 8 && b[linuxLen8DLC] > 8 && b[linuxLen8DLC] <= 15 {
		f.DLC = b[linuxLen8DLC]
	}
	if id&linuxRTR != 0 {
		f.Flags |= RTR
		return f.Check()
	}
	f.Len = uint8(n)
	copy(f.Data[:n], b[8:8+n])
	return f.Check()
}

// AppendLinux appends f as a CAN_RAW socket gives it: a can_frame, or a
// canfd_frame for a CAN FD frame (the inverse of FromLinux).
func AppendLinux(dst []byte, f *Frame) []byte {
	id := f.ID
	switch {
	case f.Flags&ErrorFrame != 0:
		id |= linuxERR
	case f.Flags&Extended != 0:
		id |= linuxEFF
	}
	if f.Flags&RTR != 0 {
		id |= linuxRTR
	}
	dst = binary.NativeEndian.AppendUint32(dst, id)
	if f.Flags&FD != 0 {
		fl := byte(linuxFDFDF)
		if f.Flags&BRS != 0 {
			fl |= linuxFDBRS
		}
		if f.Flags&ESI != 0 {
			fl |= linuxFDESI
		}
		dst = append(dst, f.Len, fl, 0, 0)
		return append(dst, f.Data[:64]...)
	}
	n, dlc := f.Len, byte(0)
	if f.Flags&RTR != 0 {
		n = min(f.DLC, 8)
	}
	if f.DLC > 8 {
		dlc = f.DLC
	}
	dst = append(dst, n, 0, 0, dlc)
	return append(dst, f.Data[:8]...)
}

// IDFilter is a kernel filter of a SocketCAN source: a frame passes when
// its ID AND Mask equals ID AND Mask (and, with Extended, it is a 29-bit
// one; otherwise an 11-bit one).
type IDFilter struct {
	ID, Mask uint32
	Extended bool
}

// ParseIDFilter reads "ID" (this ID only), "ID/MASK" or either with an
// "x" after the ID for a 29-bit one: "0x100/0x700", "0x18FEF100x".
func ParseIDFilter(s string) (IDFilter, error) {
	idS, maskS, hasMask := strings.Cut(strings.TrimSpace(s), "/")
	var f IDFilter
	if strings.HasSuffix(idS, "x") || strings.HasSuffix(idS, "X") {
		f.Extended, idS = true, idS[:len(idS)-1]
	}
	bad := func() (IDFilter, error) {
		return IDFilter{}, fmt.Errorf("%w: ID filter %q: want ID, ID/MASK, with x after a 29-bit ID (0x100/0x700, 0x18FEF100x)", ErrOptions, s)
	}
	id, err := strconv.ParseUint(idS, 0, 32)
	if err != nil {
		return bad()
	}
	max := uint64(MaxStandardID)
	if f.Extended {
		max = MaxExtendedID
	}
	mask := max
	if hasMask {
		if mask, err = strconv.ParseUint(maskS, 0, 32); err != nil || mask > max {
			return bad()
		}
	}
	if id > max {
		return bad()
	}
	f.ID, f.Mask = uint32(id), uint32(mask)
	return f, nil
}
