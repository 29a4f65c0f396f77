package mcap_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/edr-lite/edr-lite/internal/hostile"
	"github.com/edr-lite/edr-lite/mcap"
)

// TestHostileChunksBounded: chunks declaring more than their bytes can
// decompress to, or more than the limit, are refused before anything is
// allocated; a real bomb under the limit decompresses.
func TestHostileChunksBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		want error
	}{
		{"mcap-lz4-claims-1GiB.mcap", mcap.ErrTooLarge}, // over the 256 MiB default
		{"mcap-zstd-fcs-1GiB.mcap", mcap.ErrTooLarge},
		{"mcap-zstd-bomb-512MiB.mcap", mcap.ErrTooLarge},
		{"mcap-zstd-bomb-32MiB.mcap", nil},
	} {
		r, err := mcap.NewReader(hostile.Named(tc.name).Bytes(), tc.name, mcap.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Scan()
		var ce *mcap.CorruptError
		if tc.want == nil && err != nil || tc.want != nil && (!errors.Is(err, tc.want) || !errors.As(err, &ce) || ce.Field != "Chunk.uncompressed_size") {
			t.Errorf("%s: %v, want %v at Chunk.uncompressed_size", tc.name, err, tc.want)
		}
		r.Close()
	}
	// Under a limit of 2 GiB, only what the stored bytes can produce is
	// believed: 1 GiB from 64 bytes of lz4 is corrupt, not large.
	r, _ := mcap.NewReader(hostile.Named("mcap-lz4-claims-1GiB.mcap").Bytes(), "x", mcap.ReaderOptions{MaxChunkSize: 2 << 30})
	if _, err := r.Scan(); !errors.Is(err, mcap.ErrCorrupt) {
		t.Errorf("lz4 claim with a high limit: %v, want ErrCorrupt", err)
	}
}

// TestCursorOverlapLimited: chunks that all overlap in time would need more
// than the limit decompressed at once; reading them in time order is
// refused at once (it used to decompress every chunk again for every
// message) and file order reads them. (A limit at the overlap reading
// everything in time order is TestCursor's.)
func TestCursorOverlapLimited(t *testing.T) {
	b := hostile.Named("mcap-2k-overlapping-chunks.mcap").Bytes()
	for _, tc := range []struct {
		limit uint64
		fileOrder,
		ok bool
	}{{128 << 20, false, false}, {128 << 20, true, true}} {
		r, err := mcap.NewReader(b, "o.mcap", mcap.ReaderOptions{MaxChunkSize: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.Cursor()
		if err != nil {
			t.Fatal(err)
		}
		if tc.fileOrder {
			c.FileOrder()
		}
		n := 0
		for {
			more, err := c.Next()
			if err != nil {
				if tc.ok || !errors.Is(err, mcap.ErrTooLarge) {
					t.Fatalf("limit %d, file order %v: %v", tc.limit, tc.fileOrder, err)
				}
				break
			}
			if !more {
				break
			}
			n++
		}
		if tc.ok && uint64(n) != c.Info().Messages {
			t.Errorf("limit %d, file order %v: %d messages of %d", tc.limit, tc.fileOrder, n, c.Info().Messages)
		}
		r.Close()
	}
}

// TestVerifyHostile: what a reader skips, Verify checks.
func TestVerifyHostile(t *testing.T) {
	// the valid MCAP cut 40 bytes before its end (in the last summary offset
	// record, before the footer), whatever its size
	cutFooter := fmt.Sprintf("mcap-cut-at-%d.mcap", len(hostile.Named("valid.mcap").Bytes())-40)
	for name, field := range map[string]string{
		"mcap-nested-chunk.mcap":        "Chunk.records+0: opcode",
		"mcap-message-index-lies.mcap":  "MessageIndex.records[0]",
		"mcap-attachment-2e63.mcap":     "Attachment",
		"mcap-chunk-index-lies.mcap":    "ChunkIndex.chunk_start_offset",
		"mcap-summary-offset-loop.mcap": "Footer.summary_start",
		cutFooter:                       "record (opcode 0x0e) length",
	} {
		r, err := mcap.NewReader(hostile.Named(name).Bytes(), name, mcap.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Verify()
		var ce *mcap.CorruptError
		if !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("%s: %v, want a problem at %s", name, err, field)
		}
		r.Close()
	}
	r, _ := mcap.NewReader(hostile.Named("valid.mcap").Bytes(), "valid.mcap", mcap.ReaderOptions{})
	if info, err := r.Verify(); err != nil || info.Messages == 0 {
		t.Errorf("valid file: %v", err)
	}
}
