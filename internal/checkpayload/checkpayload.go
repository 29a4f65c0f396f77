package checkpayload

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// MaxLen is the largest payload Fill produces; buffers must be at least this
// long.
const MaxLen = 12 + 200

// ErrCorrupt is wrapped by Verify's errors.
var ErrCorrupt = errors.New("checkpayload: corrupt payload")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Fill writes the payload for seq into buf (len >= MaxLen): 8 bytes of seq,
// pseudo-random filler of a seq-dependent length, and a CRC32C of everything
// before it.
func Fill(buf []byte, seq uint64) []byte {
	n := 12 + int(seq*2654435761%200)
	p := buf[:n]
	binary.LittleEndian.PutUint64(p, seq)
	x := uint32(seq) | 1
	for i := 8; i < n-4; i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p[i] = byte(x)
	}
	binary.LittleEndian.PutUint32(p[n-4:], crc32.Checksum(p[:n-4], castagnoli))
	return p
}

// Verify checks p's CRC and returns the sequence number it carries.
func Verify(p []byte) (uint64, error) {
	if len(p) < 12 {
		return 0, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(p))
	}
	n := len(p)
	if crc32.Checksum(p[:n-4], castagnoli) != binary.LittleEndian.Uint32(p[n-4:]) {
		return 0, fmt.Errorf("%w: checksum mismatch (claims seq %d)", ErrCorrupt, binary.LittleEndian.Uint64(p))
	}
	return binary.LittleEndian.Uint64(p), nil
}
