//go:build linux

package mcap

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkFileSink compares the mmap window sink with write(2) for the same
// bytes written in 1 MiB pieces, both ending with fsync: the cost of the
// file path alone, without MCAP encoding.
func BenchmarkFileSink(b *testing.B) {
	const total = 32 << 20
	piece := make([]byte, 1<<20)
	for i := range piece {
		piece[i] = byte(i)
	}
	b.Run("kind=write+fsync", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "f")
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			for range total / len(piece) {
				if _, err := f.Write(piece); err != nil {
					b.Fatal(err)
				}
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	for _, win := range []int{1 << 20, 8 << 20, 32 << 20} {
		b.Run(fmt.Sprintf("kind=mmap/window=%d", win), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "f")
			b.SetBytes(total)
			b.ReportAllocs()
			for b.Loop() {
				f, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				s, _ := newMmapSink(f, win)
				for range total / len(piece) {
					if _, err := s.Write(piece); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.finish(); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}
