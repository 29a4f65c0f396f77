package testutil

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// CheckDocHexdump checks the byte examples of a Markdown document against
// data, the file they quote, so the two cannot drift apart. The examples are
// the fenced code blocks whose info string is "hexdump". In them, a line
//
//	00000008  01 00  major FormatMajor = 1
//
// states that data holds the bytes 01 00 at offset 0x8: an offset of eight
// hex digits, two spaces, bytes as two hex digits separated by one space,
// then (after two spaces) free text. Lines that are empty or start with "#"
// or "..." are ignored; any other line is reported, so a malformed example
// is not silently skipped. The document must hold at least one example.
//
// On a mismatch the report prints the line as it should read.
func CheckDocHexdump(tb testing.TB, docPath string, data []byte) {
	tb.Helper()
	doc, err := os.ReadFile(docPath)
	if err != nil {
		tb.Fatal(err)
	}
	lines, problems := parseHexdumps(doc)
	for _, p := range problems {
		tb.Errorf("%s:%s", docPath, p)
	}
	if len(lines) == 0 {
		tb.Errorf("%s: no ```hexdump block with byte lines", docPath)
	}
	for _, l := range lines {
		end := l.off + int64(len(l.bytes))
		switch {
		case end > int64(len(data)):
			tb.Errorf("%s:%d: bytes [%#x, %#x) beyond the %d bytes of the file", docPath, l.lineNo, l.off, end, len(data))
		case !bytes.Equal(data[l.off:end], l.bytes):
			tb.Errorf("%s:%d: the file holds other bytes at %#x; the line should read\n%08x  %s", docPath, l.lineNo, l.off,
				l.off, hexBytes(data[l.off:end]))
		}
	}
}

// hexLine is one byte line of a hexdump example.
type hexLine struct {
	lineNo int
	off    int64
	bytes  []byte
}

// parseHexdumps returns the byte lines of doc's ```hexdump blocks, and
// "LINE: what" for each line it cannot read.
func parseHexdumps(doc []byte) (lines []hexLine, problems []string) {
	sc := bufio.NewScanner(bytes.NewReader(doc))
	in := false
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		fence := strings.HasPrefix(strings.TrimSpace(l), "```")
		switch {
		case fence && !in:
			in = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "```")) == "hexdump"
			continue
		case fence:
			in = false
			continue
		case !in, strings.TrimSpace(l) == "", strings.HasPrefix(l, "#"), strings.HasPrefix(l, "..."):
			continue
		}
		hl, err := parseHexLine(l)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%d: %v: %q", n, err, l))
			continue
		}
		hl.lineNo = n
		lines = append(lines, hl)
	}
	return lines, problems
}

// parseHexLine reads "OOOOOOOO  hh hh ...  text".
func parseHexLine(l string) (hexLine, error) {
	if len(l) < 10 || l[8:10] != "  " {
		return hexLine{}, fmt.Errorf("want an 8-digit hex offset and two spaces")
	}
	off, err := strconv.ParseInt(l[:8], 16, 64)
	if err != nil {
		return hexLine{}, fmt.Errorf("bad offset: %v", err)
	}
	rest := l[10:]
	if i := strings.Index(rest, "  "); i >= 0 {
		rest = rest[:i]
	}
	var out []byte
	for _, h := range strings.Split(rest, " ") {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != 1 {
			return hexLine{}, fmt.Errorf("bad byte %q", h)
		}
		out = append(out, b[0])
	}
	return hexLine{off: off, bytes: out}, nil
}

// hexBytes formats b as the byte column of a hexdump line.
func hexBytes(b []byte) string {
	s := make([]string, len(b))
	for i, c := range b {
		s[i] = fmt.Sprintf("%02x", c)
	}
	return strings.Join(s, " ")
}
