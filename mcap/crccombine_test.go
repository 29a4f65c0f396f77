package mcap

import (
	"hash/crc32"
	"testing"
)

// TestCRC32Combine: the combined CRC is the CRC of the concatenation, for
// lengths around powers of two and chunk sizes.
func TestCRC32Combine(t *testing.T) {
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(i*131 + i>>9)
	}
	for _, split := range [][2]int{{0, 0}, {0, 5}, {7, 0}, {1, 1}, {100, 1 << 20}, {12345, 3<<20 - 12345}, {1 << 20, 1<<20 + 17}, {3, 65536}} {
		a, b := data[:split[0]], data[split[0]:split[0]+split[1]]
		want := crc32.Update(crc32.ChecksumIEEE(a), crc32.IEEETable, b)
		if got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b))); got != want {
			t.Errorf("lengths %d + %d: %#x, want %#x", len(a), len(b), got, want)
		}
	}
}
