package pack

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestCRCRanges: the constant-time range CRC equals hash/crc32's CRC-32C of
// the same bytes for random ranges of random buffers, short and long.
func TestCRCRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 255, 256, 257, 4096, 100_003} {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		c := newCRCRanges(b)
		for range 300 {
			a := rng.IntN(size + 1)
			e := a + rng.IntN(size-a+1)
			if got, want := c.crc(int64(a), int64(e)), crc32.Checksum(b[a:e], crc32.MakeTable(crc32.Castagnoli)); got != want {
				t.Fatalf("size %d: crc(%d, %d) = %#08x, want %#08x", size, a, e, got, want)
			}
		}
		if size > 0 {
			if got, want := c.crc(0, int64(size)), crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)); got != want {
				t.Fatalf("size %d: whole buffer %#08x, want %#08x", size, got, want)
			}
		}
	}
}
