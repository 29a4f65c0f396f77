package dumpfile

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/mcap"
)

// TestVerifyMCAPSummaryMismatch: an MCAP file whose summary statistics
// disagree with its data section (summary CRC 0, i.e. unchecked, as the
// spec allows) is reported, as are a flipped chunk byte and a clean file.
func TestVerifyMCAPSummaryMismatch(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.pack")
	writeRichPack(t, p, 1000, "a")
	m := exportToMCAP(t, p, mcap.CompressionNone)
	v, err := Verify(m)
	if err != nil || !v.OK() || v.Format != FormatMCAP || v.Messages == 0 || v.Records == 0 {
		t.Fatalf("clean file: %+v, %v", v, err)
	}
	b, _ := os.ReadFile(m)
	le := binary.LittleEndian
	footer := len(b) - 8 - (1 + 8 + 20)
	summaryStart := int(le.Uint64(b[footer+9:]))
	le.PutUint32(b[footer+25:], 0) // summary CRC 0: not checked
	found := false
	for at := summaryStart; at < footer; {
		op, n := b[at], int(le.Uint64(b[at+1:]))
		if mcap.Opcode(op) == mcap.OpStatistics {
			le.PutUint64(b[at+9:], le.Uint64(b[at+9:])+1) // message_count
			found = true
		}
		at += 9 + n
	}
	if !found {
		t.Fatal("no Statistics record in the summary")
	}
	bad := filepath.Join(dir, "bad.mcap")
	os.WriteFile(bad, b, 0o644)
	v, err = Verify(bad)
	if err != nil || v.OK() || len(v.Problems) != 1 || !strings.Contains(v.Problems[0].Reason, "summary says") {
		t.Fatalf("summary off by one: %+v, %v", v, err)
	}
}

// TestVerifyMCAPEveryCut: an MCAP dump (chunks, message indexes, metadata,
// a summary with its offsets) cut at every byte fails verification with a
// problem at an offset inside what is left, whether the cut falls in the
// data section, the summary, the summary offsets or the footer (issue 17:
// 21 cut points of 300 inside the summary used to pass).
func TestVerifyMCAPEveryCut(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.pack")
	writeRichPack(t, p, 300, "a")
	for _, comp := range []string{mcap.CompressionNone, mcap.CompressionLZ4} {
		b, err := os.ReadFile(exportToMCAP(t, p, comp))
		if err != nil {
			t.Fatal(err)
		}
		cut := filepath.Join(dir, "cut.mcap")
		for n := 1; n < len(b); n++ {
			os.WriteFile(cut, b[:n], 0o644)
			v, err := Verify(cut)
			if err != nil {
				if n < 8 { // not even the magic: not an MCAP file
					continue
				}
				t.Fatalf("%s cut at %d of %d: %v", comp, n, len(b), err)
			}
			if v.OK() || len(v.Problems) == 0 {
				t.Fatalf("%s cut at %d of %d: verify passes (%+v)", comp, n, len(b), v)
			}
			if off := v.Problems[0].Offset; off < 0 || off > int64(n) {
				t.Fatalf("%s cut at %d: problem at offset %d, outside the file: %v", comp, n, off, v.Problems[0].Reason)
			}
		}
	}
}
