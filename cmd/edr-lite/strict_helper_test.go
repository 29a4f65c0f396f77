package main

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"testing"
)

// miscount adds one to the metadata count of an MCAP file's Statistics and
// rewrites the summary CRC: the file still reads, but disagrees with
// itself.
func miscount(t *testing.T, b []byte) []byte {
	t.Helper()
	b = slices.Clone(b)
	le := binary.LittleEndian
	footer := len(b) - 8 - (1 + 8 + 20)
	start := le.Uint64(b[footer+9:])
	for at := int(start); at < footer; {
		op, n := b[at], int(le.Uint64(b[at+1:]))
		if op == 0x0B { // Statistics
			mc := at + 9 + 8 + 2 + 4 + 4 // message, schema, channel, attachment counts
			le.PutUint32(b[mc:], le.Uint32(b[mc:])+1)
			le.PutUint32(b[footer+25:], crc32.ChecksumIEEE(b[start:footer+25]))
			return b
		}
		at += 9 + n
	}
	t.Fatal("no Statistics record")
	return nil
}
