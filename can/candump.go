package can

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// candump's log format (can-utils' candump -l, log2asc, asc2log):
//
//	(1436509052.249713) can0 123#DEADBEEF
//	(1436509052.249713) can0 12345678#DEADBEEF R     extended ID, received
//	(1436509052.249713) can0 123#R4                  RTR asking for 4 bytes
//	(1436509052.249713) can0 123##5112233            CAN FD, flags nibble (1 BRS, 2 ESI, 4 FDF), data
//	(1436509052.249713) can0 123#1122334455667788_E  8 bytes with DLC 14
//	(1436509052.249713) can0 20000080#0000000000000000   an error frame (CAN_ERR_FLAG)
//	DROPCOUNT: dropped 3 CAN frames on 'can0' socket (total drops 3)
const (
	canErrFlag = 0x20000000 // CAN_ERR_FLAG in an 8-digit identifier
	fdFlagBRS  = 1
	fdFlagESI  = 2
	fdFlagFDF  = 4
)

// CandumpReader reads a candump log (docs/can.md, "Log files").
type CandumpReader struct {
	l       lines
	f       [5][]byte
	c       [5]int
	dropped map[string]uint64
}

// NewCandumpReader reads a candump log from r.
func NewCandumpReader(r io.Reader) *CandumpReader {
	return &CandumpReader{l: newLines(r), dropped: map[string]uint64{}}
}

// Line returns the number of the line last read.
func (c *CandumpReader) Line() int { return c.l.n }

// Dropped returns the DROPCOUNT lines' frames, per bus.
func (c *CandumpReader) Dropped() map[string]uint64 { return c.dropped }

// Skipped is always 0: a candump log has no other lines.
func (c *CandumpReader) Skipped() int { return 0 }

// Next reads the next frame.
func (c *CandumpReader) Next(r *Record) error {
	for c.l.next() {
		line := c.l.line
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if bytes.HasPrefix(line, []byte("DROPCOUNT:")) {
			if err := c.dropcount(line); err != nil {
				return err
			}
			continue
		}
		return ParseCandump(line, c.l.n, r, c.f[:], c.c[:])
	}
	if c.l.err != nil {
		return c.l.err
	}
	return io.EOF
}

// dropcount reads "DROPCOUNT: dropped N CAN frame(s) on 'BUS' socket ...".
func (c *CandumpReader) dropcount(line []byte) error {
	var n uint64
	var bus string
	if _, err := fmt.Sscanf(string(line), "DROPCOUNT: dropped %d CAN frame", &n); err != nil {
		return &LineError{Line: c.l.n, Msg: "a DROPCOUNT line without its count"}
	}
	if i := bytes.IndexByte(line, '\''); i >= 0 {
		if j := bytes.IndexByte(line[i+1:], '\''); j >= 0 {
			bus = string(line[i+1 : i+1+j])
		}
	}
	if bus == "" {
		return &LineError{Line: c.l.n, Msg: "a DROPCOUNT line without its 'bus'"}
	}
	if len(c.dropped) < 1024 {
		c.dropped[bus] += n
	}
	return nil
}

// ParseCandump reads one line of a candump log (lineNo numbers errors):
// "(SEC.FRAC) BUS FRAME [R|T]". FRAC has 6 or 9 digits. fs and cols are
// scratch space of 5 entries each (nil: allocated).
func ParseCandump(line []byte, lineNo int, r *Record, fs [][]byte, cols []int) error {
	if cap(fs) < 5 || cap(cols) < 5 {
		fs, cols = make([][]byte, 5), make([]int, 5)
	}
	bad := func(col int, format string, a ...any) error {
		return &LineError{Line: lineNo, Col: col, Msg: fmt.Sprintf(format, a...)}
	}
	f, col := fields(line, fs, cols)
	if len(f) < 3 || len(f) > 4 {
		return bad(0, "want (TIME) BUS FRAME [R|T], found %d fields", len(f))
	}
	ts := f[0]
	if len(ts) < 3 || ts[0] != '(' || ts[len(ts)-1] != ')' {
		return bad(col[0], "the time is not in parentheses")
	}
	ts = ts[1 : len(ts)-1]
	if d := bytes.IndexByte(ts, '.'); d < 0 || (len(ts)-d-1 != 6 && len(ts)-d-1 != 9) {
		return bad(col[0]+1, "the time %q needs 6 or 9 decimal places", ts)
	}
	ns, ok := parseTime(ts)
	if !ok {
		return bad(col[0]+1, "the time %q is not SECONDS.FRACTION", ts)
	}
	if len(f[1]) > 64 {
		return bad(col[1], "a bus name of %d bytes (at most 64)", len(f[1]))
	}
	r.TimeNs, r.Bus = ns, f[1]
	if err := parseFrame(f[2], &r.Frame); err != nil {
		return bad(col[2]+err.col, "%s", err.msg)
	}
	if len(f) == 4 {
		switch string(f[3]) {
		case "T":
			if r.Frame.Flags&ErrorFrame == 0 {
				r.Frame.Flags |= Tx
			}
		case "R":
		default:
			return bad(col[3], "%q after the frame: want R or T (the direction)", f[3])
		}
	}
	return nil
}

type frameErr struct {
	col int // from 0, within the frame field
	msg string
}

// parseFrame reads cansend's notation of a frame (can-utils' lib.c
// parse_canframe, CAN XL aside), strictly: every byte accounted for.
func parseFrame(s []byte, fr *Frame) *frameErr {
	*fr = Frame{}
	hash := bytes.IndexByte(s, '#')
	if hash < 0 {
		return &frameErr{0, fmt.Sprintf("%q has no '#' between ID and data", s)}
	}
	id, ok := parseHex(s[:hash])
	if !ok || (hash != 3 && hash != 8) {
		return &frameErr{0, fmt.Sprintf("the ID %q is not 3 hex digits (11-bit) or 8 (29-bit)", s[:hash])}
	}
	i := hash + 1
	switch {
	case hash == 3:
		if id > MaxStandardID {
			return &frameErr{0, fmt.Sprintf("the 11-bit ID %03X exceeds 7FF", id)}
		}
	case id&canErrFlag != 0:
		if id&^(canErrFlag|MaxErrorClass) != 0 {
			return &frameErr{0, fmt.Sprintf("the error frame's ID %08X has bits beyond the error class", id)}
		}
		fr.ID, fr.Flags = id&MaxErrorClass, ErrorFrame
	default:
		if id > MaxExtendedID {
			return &frameErr{0, fmt.Sprintf("the 29-bit ID %08X exceeds 1FFFFFFF", id)}
		}
		fr.Flags = Extended
	}
	if fr.Flags&ErrorFrame == 0 {
		fr.ID = id
	}
	if i < len(s) && (s[i] == 'R' || s[i] == 'r') {
		if fr.Flags&ErrorFrame != 0 {
			return &frameErr{i, "an error frame cannot be an RTR"}
		}
		fr.Flags |= RTR
		i++
		if i < len(s) {
			n, ok := hexNibble(s[i])
			if !ok || n > 8 {
				return &frameErr{i, fmt.Sprintf("RTR length %q: want 0..8", s[i])}
			}
			fr.DLC = n
			i++
			if n == 8 && i < len(s) && s[i] == '_' {
				if i+1 >= len(s) {
					return &frameErr{i, "'_' without a DLC"}
				}
				d, ok := hexNibble(s[i+1])
				if !ok || d < 9 {
					return &frameErr{i + 1, fmt.Sprintf("raw DLC %q: want 9..F", s[i+1])}
				}
				fr.DLC = d
				i += 2
			}
		}
		if i != len(s) {
			return &frameErr{i, fmt.Sprintf("%q after the RTR", s[i:])}
		}
		return nil
	}
	maxLen := 8
	if i < len(s) && s[i] == '#' {
		if fr.Flags&ErrorFrame != 0 {
			return &frameErr{i, "an error frame cannot be CAN FD"}
		}
		if i+1 >= len(s) {
			return &frameErr{i, "'##' without the CAN FD flags digit"}
		}
		fl, ok := hexNibble(s[i+1])
		if !ok || fl&^(fdFlagBRS|fdFlagESI|fdFlagFDF) != 0 {
			return &frameErr{i + 1, fmt.Sprintf("CAN FD flags %q: want a hex digit of 1 (BRS), 2 (ESI), 4 (FDF)", s[i+1])}
		}
		fr.Flags |= FD
		if fl&fdFlagBRS != 0 {
			fr.Flags |= BRS
		}
		if fl&fdFlagESI != 0 {
			fr.Flags |= ESI
		}
		maxLen = 64
		i += 2
	}
	n := 0
	for i < len(s) && s[i] != '_' {
		if s[i] == '.' {
			i++
			continue
		}
		if n == maxLen {
			return &frameErr{i, fmt.Sprintf("more than %d data bytes", maxLen)}
		}
		if i+1 >= len(s) {
			return &frameErr{i, "an odd number of hex digits"}
		}
		hi, ok1 := hexNibble(s[i])
		lo, ok2 := hexNibble(s[i+1])
		if !ok1 || !ok2 {
			return &frameErr{i, fmt.Sprintf("%q is not a hex byte", s[i:i+2])}
		}
		fr.Data[n] = hi<<4 | lo
		n++
		i += 2
	}
	fr.Len = uint8(n)
	switch {
	case fr.Flags&FD != 0:
		dlc, ok := FDDLC(n)
		if !ok {
			return &frameErr{hash, fmt.Sprintf("%d data bytes: not a CAN FD length (0..8, 12, 16, 20, 24, 32, 48, 64)", n)}
		}
		fr.DLC = dlc
	default:
		fr.DLC = uint8(n)
	}
	if i < len(s) { // '_': the raw DLC of 8 classic bytes
		if fr.Flags&FD != 0 || n != 8 || i+2 != len(s) {
			return &frameErr{i, fmt.Sprintf("%q after the data: '_X' is only for 8 classic bytes", s[i:])}
		}
		d, ok := hexNibble(s[i+1])
		if !ok || d < 9 {
			return &frameErr{i + 1, fmt.Sprintf("raw DLC %q: want 9..F", s[i+1])}
		}
		fr.DLC = d
	}
	if fr.Flags&ErrorFrame != 0 && n != 8 {
		return &frameErr{hash + 1, fmt.Sprintf("an error frame has 8 data bytes, not %d", n)}
	}
	if fr.Flags&ErrorFrame != 0 {
		fr.DLC = 8
	}
	return nil
}

// AppendCandump appends f as a candump log line at timeNs on bus (a name
// without white space), ending in '\n': the time with 6 decimal places (9
// when timeNs is not whole microseconds), the frame as candump writes it,
// " T" for a frame sent by the recording node.
func AppendCandump(dst []byte, timeNs int64, bus string, f *Frame) []byte {
	dst = append(dst, '(')
	sec := strconv.AppendInt(nil, timeNs/1e9, 10)
	for range 10 - len(sec) {
		dst = append(dst, '0')
	}
	dst = append(dst, sec...)
	dst = append(dst, '.')
	if frac := timeNs % 1e9; frac%1000 == 0 {
		dst = fmt.Appendf(dst, "%06d", frac/1000)
	} else {
		dst = fmt.Appendf(dst, "%09d", frac)
	}
	dst = append(dst, ") "...)
	dst = append(dst, bus...)
	dst = append(dst, ' ')
	dst = AppendFrameText(dst, f)
	if f.Flags&Tx != 0 {
		dst = append(dst, " T"...)
	}
	return append(dst, '\n')
}

// AppendFrameText appends f in cansend's notation (123#DEADBEEF).
func AppendFrameText(dst []byte, f *Frame) []byte {
	switch {
	case f.Flags&ErrorFrame != 0:
		dst = fmt.Appendf(dst, "%08X#", f.ID|canErrFlag)
	case f.Flags&Extended != 0:
		dst = fmt.Appendf(dst, "%08X#", f.ID)
	default:
		dst = fmt.Appendf(dst, "%03X#", f.ID)
	}
	if f.Flags&RTR != 0 {
		dst = append(dst, 'R')
		if f.DLC > 0 {
			dst = append(dst, hexDigits[min(f.DLC, 8)])
			if f.DLC > 8 {
				dst = append(dst, '_', hexDigits[f.DLC])
			}
		}
		return dst
	}
	if f.Flags&FD != 0 {
		fl := byte(fdFlagFDF)
		if f.Flags&BRS != 0 {
			fl |= fdFlagBRS
		}
		if f.Flags&ESI != 0 {
			fl |= fdFlagESI
		}
		dst = append(dst, '#', hexDigits[fl])
	}
	for _, b := range f.Data[:f.Len] {
		dst = appendHexByte(dst, b)
	}
	if f.Flags&FD == 0 && f.Len == 8 && f.DLC > 8 {
		dst = append(dst, '_', hexDigits[f.DLC])
	}
	return dst
}
