package can

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes bounds a line of a candump log or an ASC file: the longest
// real one (a CAN FD frame of 64 bytes with an ASC line's trailing
// fields) is under 400 bytes.
const MaxLineBytes = 4096

// ErrLog is wrapped by every *LineError.
var ErrLog = errors.New("can: bad log line")

// LineError is a line of a log file that cannot be read: its number
// (from 1), the byte in it (from 1; 0 when the whole line is at fault)
// and what is wrong.
type LineError struct {
	Line, Col int
	Msg       string
}

func (e *LineError) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

func (e *LineError) Unwrap() error { return ErrLog }

// Record is one frame of a log file: its time, the bus it was on and the
// frame. Bus aliases the reader's buffer: valid until the next Next.
type Record struct {
	TimeNs int64
	Bus    []byte
	Frame  Frame
}

// LogReader reads the frames of a log file one at a time.
type LogReader interface {
	// Next fills r with the next frame; io.EOF after the last. Any
	// other error is a *LineError (or the reader's I/O error) and is
	// final.
	Next(r *Record) error
	// Line returns the number of the line last read.
	Line() int
	// Dropped returns the frames the log says were dropped before it was
	// written (candump's DROPCOUNT lines), per bus, so far.
	Dropped() map[string]uint64
	// Skipped returns how many lines were skipped as holding no frame
	// (ASC events other than frames), so far.
	Skipped() int
}

// lines reads a file line by line, each at most MaxLineBytes, without
// allocating per line.
type lines struct {
	r    *bufio.Reader
	n    int
	err  error
	line []byte
}

func newLines(r io.Reader) lines {
	return lines{r: bufio.NewReaderSize(r, MaxLineBytes)}
}

// next returns the next line without its end (\n or \r\n), or false at
// the end or on an error (l.err; nil at a clean end).
func (l *lines) next() bool {
	if l.err != nil {
		return false
	}
	b, err := l.r.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		l.n++
		l.err = &LineError{Line: l.n, Msg: fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
		return false
	case err == io.EOF && len(b) == 0:
		return false
	case err != nil && err != io.EOF:
		l.err = err
		return false
	}
	l.n++
	b = bytes.TrimSuffix(b, []byte("\n"))
	l.line = bytes.TrimSuffix(b, []byte("\r"))
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// fields splits a line into up to len(dst) whitespace-separated fields,
// returning them (aliasing line) and their columns.
func fields(line []byte, dst [][]byte, cols []int) ([][]byte, []int) {
	dst, cols = dst[:0], cols[:0]
	for i := 0; i < len(line) && len(dst) < cap(dst); {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && !isSpace(line[j]) {
			j++
		}
		dst, cols = append(dst, line[i:j]), append(cols, i+1)
		i = j
	}
	return dst, cols
}

func hexNibble(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// parseHex reads b as a hexadecimal number of at most 8 digits.
func parseHex(b []byte) (uint32, bool) {
	if len(b) == 0 || len(b) > 8 {
		return 0, false
	}
	var v uint32
	for _, c := range b {
		n, ok := hexNibble(c)
		if !ok {
			return 0, false
		}
		v = v<<4 | uint32(n)
	}
	return v, true
}

// parseDec reads b as a decimal number of at most 18 digits.
func parseDec(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// parseTime reads "SEC.FRAC" (FRAC 1 to 9 digits) as ns; seconds up to
// 9223372035 (the last second an int64 of ns holds).
func parseTime(b []byte) (int64, bool) {
	dot := bytes.IndexByte(b, '.')
	if dot < 0 || dot == len(b)-1 || len(b)-dot-1 > 9 {
		return 0, false
	}
	sec, ok := parseDec(b[:dot])
	if !ok || sec > 9223372035 {
		return 0, false
	}
	frac, ok := parseDec(b[dot+1:])
	if !ok {
		return 0, false
	}
	for i := len(b) - dot - 1; i < 9; i++ {
		frac *= 10
	}
	return sec*1e9 + frac, true
}

const hexDigits = "0123456789ABCDEF"

func appendHexByte(dst []byte, b byte) []byte {
	return append(dst, hexDigits[b>>4], hexDigits[b&15])
}
