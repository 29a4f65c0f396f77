package mcap

import (
	"hash/crc32"
	"math/rand/v2"
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

// TestCRC32CombineLarge: for lengths up to 2^50 bytes (past 2^32, where
// the table of x^(2^k) wraps), the same as the register advanced over the
// zero bytes by squared GF(2) operator matrices (zlib's first method, an
// independent derivation).
func TestCRC32CombineLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		n := int64(rng.Uint64() >> (14 + i%50))
		a, b := rng.Uint32(), rng.Uint32()
		if got, want := crc32Combine(a, b, n), crc32CombineMatrix(a, b, n); got != want {
			t.Fatalf("n=%d: %#x, want %#x", n, got, want)
		}
	}
}

func crc32CombineMatrix(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd [32]uint32
	odd[0] = crcPoly // one zero bit
	for n, row := 1, uint32(1); n < 32; n, row = n+1, row<<1 {
		odd[n] = row
	}
	square(&even, &odd) // two zero bits
	square(&odd, &even) // four
	for {
		square(&even, &odd) // one zero byte, then 4, 16, ...
		if lenB&1 != 0 {
			crcA = times(&even, crcA)
		}
		if lenB >>= 1; lenB == 0 {
			break
		}
		square(&odd, &even)
		if lenB&1 != 0 {
			crcA = times(&odd, crcA)
		}
		if lenB >>= 1; lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

func times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func square(sq, mat *[32]uint32) {
	for n := range 32 {
		sq[n] = times(mat, mat[n])
	}
}

func BenchmarkCRC32Combine(b *testing.B) {
	x := uint32(1)
	for b.Loop() {
		x = crc32Combine(x, 0x1234, 1<<20+int64(x&1023))
	}
}
