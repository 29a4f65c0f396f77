package pack

import (
	"fmt"

	"github.com/dgraph-io/ristretto/v2"
)

// FrameCache is a bounded cache of decompressed frame data, shared by any
// number of Readers (ReaderOptions.Cache). It pays for random access to
// compressed files: repeated seeks and looped replay, which revisit frames. For a single sequential pass it only costs (see the benchmarks).
//
// A FrameCache is safe for concurrent use. Cached bytes are immutable; a
// Reader with a cache hands out slices of them.
type FrameCache struct {
	c *ristretto.Cache[uint64, *cachedFrame]
}

type cachedFrame struct {
	reader uint64
	off    int64
	data   []byte
}

// NewFrameCache returns a cache holding at most maxBytes of decompressed data.
func NewFrameCache(maxBytes int64) (*FrameCache, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("pack: frame cache size %d must be positive", maxBytes)
	}
	// Assume frames of at least 16 KiB for the number of counters.
	items := max(maxBytes/(16<<10), 64)
	c, err := ristretto.NewCache(&ristretto.Config[uint64, *cachedFrame]{
		NumCounters: items * 10, MaxCost: maxBytes, BufferItems: 64,
	})
	if err != nil {
		return nil, fmt.Errorf("pack: frame cache: %w", err)
	}
	return &FrameCache{c: c}, nil
}

func cacheKey(reader uint64, off int64) uint64 {
	return reader*0x9E3779B97F4A7C15 ^ uint64(off)
}

func (fc *FrameCache) get(reader uint64, off int64) ([]byte, bool) {
	v, ok := fc.c.Get(cacheKey(reader, off))
	if !ok || v.reader != reader || v.off != off {
		return nil, false
	}
	return v.data, true
}

func (fc *FrameCache) put(reader uint64, off int64, data []byte) {
	fc.c.Set(cacheKey(reader, off), &cachedFrame{reader: reader, off: off, data: data}, int64(len(data)))
}

// Wait blocks until pending insertions are visible (ristretto buffers them).
func (fc *FrameCache) Wait() { fc.c.Wait() }

// Close releases the cache's goroutines.
func (fc *FrameCache) Close() { fc.c.Close() }
