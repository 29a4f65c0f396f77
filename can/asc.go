package can

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Vector ASC (docs/can.md, "Log files"), the lines this package reads:
//
//	date Thu Jul  9 06:17:32 2015              the measurement's start, local time
//	base hex  timestamps absolute              or dec, relative
//	0.249713 1  123             Rx   d 4 DE AD BE EF
//	0.249713 1  12345678x       Tx   r 4
//	0.249713 1  ErrorFrame
//	0.249713 CANFD   1 Rx 123  1 0 d 32 00 01 ... 1c  130000  130  3000 0 0 0 0 0
//
// Channel N is the bus "can" + (N-1), as can-utils' asc2log names it,
// unless a comment line "// edr-lite channel N: NAME" (which the writer
// adds for other names) says otherwise. Other events (statistics, status,
// "Start of measurement") are skipped and counted.

// ASC flags of a CANFD line's Flags field (can-utils' log2asc).
const (
	ascFlagRTR = 0x00000010
	ascFlagFDF = 0x00001000
	ascFlagBRS = 0x00002000
	ascFlagESI = 0x00004000
)

const errClassBusError = 0x00000080 // CAN_ERR_BUSERROR: all an ASC ErrorFrame says

const ascChannelComment = "// edr-lite channel "

// ASCReader reads a Vector ASC file.
type ASCReader struct {
	l        lines
	f        [80][]byte
	c        [80]int
	hex      bool
	relative bool
	dateNs   int64
	hasDate  bool
	prevNs   int64
	started  bool
	names    map[int]string
	bus      []byte
	skipped  int
}

// NewASCReader reads an ASC file from r.
func NewASCReader(r io.Reader) *ASCReader {
	return &ASCReader{l: newLines(r), hex: true, names: map[int]string{}}
}

// Line returns the number of the line last read.
func (a *ASCReader) Line() int { return a.l.n }

// Dropped is always empty: ASC files do not say.
func (a *ASCReader) Dropped() map[string]uint64 { return nil }

// Skipped returns how many event lines other than frames were skipped.
func (a *ASCReader) Skipped() int { return a.skipped }

// HasDate reports whether the file gave its start ("date ..."); without
// one, times count from 0 (the UNIX epoch).
func (a *ASCReader) HasDate() bool { return a.hasDate }

func (a *ASCReader) bad(col int, format string, args ...any) error {
	return &LineError{Line: a.l.n, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// Next reads the next frame.
func (a *ASCReader) Next(r *Record) error {
	for a.l.next() {
		line := a.l.line
		t := bytes.TrimLeft(line, " \t")
		switch {
		case len(t) == 0:
			continue
		case t[0] >= '0' && t[0] <= '9':
			ok, err := a.event(line, r)
			if err != nil {
				return err
			}
			if ok {
				return nil
			}
			a.skipped++
		case bytes.HasPrefix(t, []byte("date ")):
			if a.started {
				continue // a later block's date: times stay relative to the first
			}
			if err := a.date(t); err != nil {
				return err
			}
		case bytes.HasPrefix(t, []byte("base ")):
			if err := a.base(t); err != nil {
				return err
			}
		case bytes.HasPrefix(t, []byte(ascChannelComment)):
			if err := a.channelName(t); err != nil {
				return err
			}
		case bytes.HasPrefix(t, []byte("//")), bytes.HasPrefix(t, []byte("Begin Triggerblock")),
			bytes.HasPrefix(t, []byte("Begin TriggerBlock")), bytes.HasPrefix(t, []byte("End TriggerBlock")),
			bytes.HasPrefix(t, []byte("End Triggerblock")), bytes.Equal(t, []byte("no internal events logged")),
			bytes.Equal(t, []byte("internal events logged")):
		default:
			return a.bad(0, "not an ASC line: %.40q", t)
		}
	}
	if a.l.err != nil {
		return a.l.err
	}
	return io.EOF
}

func (a *ASCReader) base(t []byte) error {
	f := strings.Fields(string(t))
	if len(f) != 4 || f[2] != "timestamps" || (f[1] != "hex" && f[1] != "dec") || (f[3] != "absolute" && f[3] != "relative") {
		return a.bad(0, "want \"base hex|dec  timestamps absolute|relative\", found %.60q", t)
	}
	a.hex, a.relative = f[1] == "hex", f[3] == "relative"
	return nil
}

func (a *ASCReader) channelName(t []byte) error {
	rest := string(t[len(ascChannelComment):])
	num, name, ok := strings.Cut(rest, ": ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 || n > 255 || name == "" || len(name) > 64 || strings.ContainsAny(name, " \t") {
		return a.bad(0, "want \"%sN: NAME\" (N 1..255, NAME without spaces)", ascChannelComment)
	}
	if len(a.names) < 256 {
		a.names[n] = name
	}
	return nil
}

var months = map[string]time.Month{
	"jan": 1, "feb": 2, "mar": 3, "mär": 3, "mrz": 3, "apr": 4, "may": 5, "mai": 5, "jun": 6, "jul": 7,
	"aug": 8, "sep": 9, "oct": 10, "okt": 10, "nov": 11, "dec": 12, "dez": 12,
}

func month(s string) (time.Month, bool) {
	s = strings.ToLower(s)
	if m, ok := months[s]; ok {
		return m, true
	}
	if len(s) > 3 { // a full name: January, Januar, März
		for k, m := range months {
			if strings.HasPrefix(s, k) {
				return m, true
			}
		}
	}
	return 0, false
}

// date reads "date [WEEKDAY] MONTH DAY HH:MM:SS[.mmm] [am|pm] YEAR", in
// the machine's local time (as Vector's tools and can-utils write it).
func (a *ASCReader) date(t []byte) error {
	f := strings.Fields(string(t))[1:]
	if len(f) > 0 {
		if _, ok := month(f[0]); !ok {
			f = f[1:] // the weekday
		}
	}
	bad := func() error {
		return a.bad(0, "want \"date WEEKDAY MONTH DAY HH:MM:SS[.mmm] [am|pm] YEAR\", found %.60q", t)
	}
	if len(f) < 4 || len(f) > 5 {
		return bad()
	}
	mon, ok := month(f[0])
	day, err1 := strconv.Atoi(f[1])
	year, err2 := strconv.Atoi(f[len(f)-1])
	if !ok || err1 != nil || err2 != nil || day < 1 || day > 31 || year < 1970 || year > 2200 {
		return bad()
	}
	hms, frac, _ := strings.Cut(f[2], ".")
	var h, m, s int
	if n, err := fmt.Sscanf(hms, "%d:%d:%d", &h, &m, &s); n != 3 || err != nil || h > 23 || m > 59 || s > 60 || h < 0 || m < 0 || s < 0 {
		return bad()
	}
	ms := 0
	if frac != "" {
		v, err := strconv.Atoi(frac)
		if err != nil || len(frac) != 3 || v < 0 {
			return bad()
		}
		ms = v
	}
	if len(f) == 5 {
		switch strings.ToLower(f[3]) {
		case "am":
			if h == 12 {
				h = 0
			}
		case "pm":
			if h < 12 {
				h += 12
			}
		default:
			return bad()
		}
	}
	a.dateNs = time.Date(year, mon, day, h, m, s, ms*1e6, time.Local).UnixNano()
	a.hasDate = true
	return nil
}

// event reads a line starting with a time: a frame (true) or another
// event (false, skipped).
func (a *ASCReader) event(line []byte, r *Record) (bool, error) {
	f, col := fields(line, a.f[:], a.c[:])
	if len(f) < 3 {
		return false, nil
	}
	ts, ok := parseTime(f[0])
	if !ok || len(f[0])-bytes.IndexByte(f[0], '.')-1 > 6 {
		if _, err := strconv.ParseFloat(string(f[0]), 64); err == nil || bytes.IndexByte(f[0], '.') < 0 {
			return false, a.bad(col[0], "the time %q is not SECONDS.FRACTION with up to 6 decimal places", f[0])
		}
		return false, a.bad(col[0], "the time %q is not SECONDS.FRACTION", f[0])
	}
	var err error
	switch {
	case string(f[1]) == "CANFD":
		ok, err = a.fdFrame(f, col, r)
	case isDigits(f[1]):
		ok, err = a.frame(f, col, r)
	default:
		return false, nil // "Start of measurement", "CAN 1 Status:...", "SV:", ...
	}
	if err != nil || !ok {
		return false, err
	}
	if a.relative {
		ts += a.prevNs
		a.prevNs = ts
	} else {
		ts += a.dateNs
	}
	if !a.relative && ts < a.dateNs || ts < 0 {
		return false, a.bad(col[0], "the time overflows")
	}
	a.started = true
	r.TimeNs = ts
	return true, nil
}

func isDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// channel sets r.Bus from an ASC channel number.
func (a *ASCReader) channel(b []byte, col int, r *Record) error {
	n, ok := parseDec(b)
	if !ok || n < 1 || n > 255 {
		return a.bad(col, "channel %q: want 1..255", b)
	}
	if name, ok := a.names[int(n)]; ok {
		a.bus = append(a.bus[:0], name...)
	} else {
		a.bus = strconv.AppendInt(append(a.bus[:0], "can"...), n-1, 10)
	}
	r.Bus = a.bus
	return nil
}

// id reads an identifier: hex (or decimal with "base dec"), 'x' at the
// end for a 29-bit one.
func (a *ASCReader) id(b []byte, col int, fr *Frame, hex bool) error {
	ext := len(b) > 1 && (b[len(b)-1] == 'x' || b[len(b)-1] == 'X')
	if ext {
		b = b[:len(b)-1]
	}
	var v uint64
	var err error
	if hex {
		v, err = strconv.ParseUint(string(b), 16, 32)
	} else {
		v, err = strconv.ParseUint(string(b), 10, 32)
	}
	switch {
	case err != nil:
		return a.bad(col, "the ID %q is not a number", b)
	case ext && v > MaxExtendedID:
		return a.bad(col, "the 29-bit ID %X exceeds 1FFFFFFF", v)
	case !ext && v > MaxStandardID:
		return a.bad(col, "the 11-bit ID %X exceeds 7FF (a 29-bit one ends in x)", v)
	}
	fr.ID = uint32(v)
	if ext {
		fr.Flags |= Extended
	}
	return nil
}

func dir(b []byte) (tx, ok bool) {
	switch string(b) {
	case "Rx":
		return false, true
	case "Tx", "TxRq":
		return true, true
	}
	return false, false
}

func (a *ASCReader) byteAt(b []byte, col int, hex bool) (byte, error) {
	base := 10
	if hex {
		base = 16
	}
	v, err := strconv.ParseUint(string(b), base, 8)
	if err != nil {
		return 0, a.bad(col, "%q is not a data byte", b)
	}
	return byte(v), nil
}

// frame reads "CH ID Rx|Tx d|r DLC DATA..." or "CH ErrorFrame ...".
func (a *ASCReader) frame(f [][]byte, col []int, r *Record) (bool, error) {
	fr := &r.Frame
	*fr = Frame{}
	if string(f[2]) == "ErrorFrame" {
		if err := a.channel(f[1], col[1], r); err != nil {
			return false, err
		}
		*fr = Frame{ID: errClassBusError, Flags: ErrorFrame, DLC: 8, Len: 8}
		return true, nil
	}
	if len(f) < 5 {
		return false, nil
	}
	tx, ok := dir(f[3])
	if !ok || (string(f[4]) != "d" && string(f[4]) != "r") {
		return false, nil // another event on the channel ("1 Statistic: ...")
	}
	if err := a.channel(f[1], col[1], r); err != nil {
		return false, err
	}
	if err := a.id(f[2], col[2], fr, a.hex); err != nil {
		return false, err
	}
	if tx {
		fr.Flags |= Tx
	}
	if string(f[4]) == "r" {
		fr.Flags |= RTR
		if len(f) > 5 {
			d, ok := hexNibble(f[5][0])
			if len(f[5]) != 1 || !ok {
				return false, a.bad(col[5], "RTR DLC %q: want one hex digit", f[5])
			}
			fr.DLC = d
		}
		return true, nil
	}
	if len(f) < 6 {
		return false, a.bad(0, "a data frame without its DLC")
	}
	d, ok := hexNibble(f[5][0])
	if len(f[5]) != 1 || !ok {
		return false, a.bad(col[5], "DLC %q: want one hex digit", f[5])
	}
	fr.DLC = d
	fr.Len = min(d, 8)
	if len(f) < 6+int(fr.Len) {
		return false, a.bad(0, "DLC %X needs %d data bytes, found %d", d, fr.Len, len(f)-6)
	}
	for i := range int(fr.Len) {
		b, err := a.byteAt(f[6+i], col[6+i], a.hex)
		if err != nil {
			return false, err
		}
		fr.Data[i] = b
	}
	return true, nil
}

// fdFrame reads "CANFD CH Rx|Tx ID [NAME] BRS ESI DLC LEN DATA... DUR BITS FLAGS ...".
func (a *ASCReader) fdFrame(f [][]byte, col []int, r *Record) (bool, error) {
	fr := &r.Frame
	*fr = Frame{}
	if len(f) < 9 {
		return false, a.bad(0, "a CANFD line of %d fields: want TIME CANFD CH DIR ID BRS ESI DLC LEN DATA... DURATION BITS FLAGS", len(f))
	}
	if err := a.channel(f[2], col[2], r); err != nil {
		return false, err
	}
	tx, ok := dir(f[3])
	if !ok {
		return false, a.bad(col[3], "direction %q: want Rx or Tx", f[3])
	}
	if err := a.id(f[4], col[4], fr, true); err != nil {
		return false, err
	}
	i := 5
	isBit := func(b []byte) bool { return len(b) == 1 && (b[0] == '0' || b[0] == '1') }
	if !isBit(f[i]) || !isBit(f[i+1]) { // a symbolic name
		i++
	}
	if len(f) < i+4 || !isBit(f[i]) || !isBit(f[i+1]) {
		return false, a.bad(col[min(i, len(col)-1)], "want BRS and ESI (0 or 1) after the ID")
	}
	dlc, ok := hexNibble(f[i+2][0])
	if len(f[i+2]) != 1 || !ok {
		return false, a.bad(col[i+2], "DLC %q: want one hex digit", f[i+2])
	}
	n, ok := parseDec(f[i+3])
	if !ok || n > 64 {
		return false, a.bad(col[i+3], "data length %q: want 0..64", f[i+3])
	}
	first := i + 4
	if len(f) < first+int(n)+3 {
		return false, a.bad(0, "%d data bytes and duration, bit count, flags: found %d fields after the length", n, len(f)-first)
	}
	for j := range int(n) {
		b, err := a.byteAt(f[first+j], col[first+j], true)
		if err != nil {
			return false, err
		}
		fr.Data[j] = b
	}
	fc := first + int(n) + 2
	flags, ok := parseHex(f[fc])
	if !ok {
		return false, a.bad(col[fc], "flags %q are not hex", f[fc])
	}
	if tx {
		fr.Flags |= Tx
	}
	switch {
	case flags&ascFlagFDF != 0:
		fr.Flags |= FD
		if flags&ascFlagBRS != 0 {
			fr.Flags |= BRS
		}
		if flags&ascFlagESI != 0 {
			fr.Flags |= ESI
		}
		if FDLen(dlc) != uint8(n) {
			return false, a.bad(col[i+2], "CAN FD DLC %X means %d bytes, not %d", dlc, FDLen(dlc), n)
		}
		fr.DLC, fr.Len = dlc, uint8(n)
	case flags&ascFlagRTR != 0:
		if n != 0 {
			return false, a.bad(col[i+3], "an RTR frame with %d data bytes", n)
		}
		fr.Flags |= RTR
		fr.DLC = dlc
	default:
		if n > 8 || min(dlc, 8) != uint8(n) {
			return false, a.bad(col[i+2], "classic DLC %X and %d data bytes", dlc, n)
		}
		fr.DLC, fr.Len = dlc, uint8(n)
	}
	return true, nil
}

// ASCWriter writes frames as a Vector ASC file: the header (date of the
// start's second, hex, absolute times), then one line per frame with its
// time relative to that second, in microseconds (asc2log reads no more).
type ASCWriter struct {
	w       io.Writer
	startNs int64
	buf     []byte
	// Rounded counts frames whose time was not whole microseconds.
	Rounded int
	// ErrorDetails counts error frames whose class and details ASC
	// cannot carry (it says only "ErrorFrame").
	ErrorDetails int
}

// NewASCWriter writes the header to w: startNs (rounded down to the
// second) is the measurement's start; channels[i] is the bus of channel
// i+1 (a comment names it when it is not "can<i>").
func NewASCWriter(w io.Writer, startNs int64, channels []string) (*ASCWriter, error) {
	a := &ASCWriter{w: w, startNs: startNs - startNs%1e9}
	if startNs < 0 {
		return nil, fmt.Errorf("%w: a start before 1970", ErrOptions)
	}
	t := time.Unix(a.startNs/1e9, 0).In(time.Local)
	b := fmt.Appendf(nil, "date %s\nbase hex  timestamps absolute\nno internal events logged\n// version 9.0.0\n",
		t.Format("Mon Jan _2 15:04:05 2006"))
	for i, name := range channels {
		if name != "can"+strconv.Itoa(i) {
			b = fmt.Appendf(b, "%s%d: %s\n", ascChannelComment, i+1, name)
		}
	}
	_, err := w.Write(b)
	return a, err
}

// Write writes frame f of channel ch (1..255) at timeNs (not before the
// start).
func (a *ASCWriter) Write(timeNs int64, ch int, f *Frame) error {
	rel := timeNs - a.startNs
	if rel < 0 {
		return fmt.Errorf("%w: a frame at %d before the ASC file's start %d", ErrOptions, timeNs, a.startNs)
	}
	if rel%1000 != 0 {
		a.Rounded++
	}
	rel /= 1000
	b := fmt.Appendf(a.buf[:0], "%4d.%06d ", rel/1e6, rel%1e6)
	dirs := "Rx"
	if f.Flags&Tx != 0 {
		dirs = "Tx"
	}
	id := strconv.AppendUint(nil, uint64(f.ID), 16)
	id = bytes.ToUpper(id)
	if f.Flags&Extended != 0 {
		id = append(id, 'x')
	}
	switch {
	case f.Flags&ErrorFrame != 0:
		b = fmt.Appendf(b, "%-2d ErrorFrame", ch)
		if f.ID != errClassBusError || f.Data != [64]byte{} {
			a.ErrorDetails++
		}
	case f.Flags&FD != 0:
		flags := ascFlagFDF
		brs, esi := '0', '0'
		if f.Flags&BRS != 0 {
			flags |= ascFlagBRS
			brs = '1'
		}
		if f.Flags&ESI != 0 {
			flags |= ascFlagESI
			esi = '1'
		}
		b = fmt.Appendf(b, "CANFD %3d %-4s %11s                                  %c %c %x %2d", ch, dirs, id, brs, esi, f.DLC, f.Len)
		for _, d := range f.Data[:f.Len] {
			b = append(b, ' ')
			b = appendHexByte(b, d)
		}
		b = fmt.Appendf(b, " %8d %4d %8X 0 0 0 0 0", 130000, 130, flags)
	default:
		b = fmt.Appendf(b, "%-2d %-15s %-4s ", ch, id, dirs)
		if f.Flags&RTR != 0 {
			b = fmt.Appendf(b, "r %X", f.DLC)
		} else {
			b = fmt.Appendf(b, "d %X", f.DLC)
			for _, d := range f.Data[:f.Len] {
				b = append(b, ' ')
				b = appendHexByte(b, d)
			}
		}
	}
	b = append(b, '\n')
	a.buf = b
	_, err := a.w.Write(b)
	return err
}
