// Command replayfloor does, as a whole process, the least that replaying a
// pack dump does, one step more in each mode, so that replay's time over
// cat's can be set against floors (BenchmarkReplayFloors,
// docs/performance.md, "replay"):
//
//	replayfloor none FILE     start and exit (a Go process of this size)
//	replayfloor read FILE     read(2) the file in 128 KiB buffers, as cat does
//	replayfloor readcrc FILE  the same and CRC32C of every buffer
//	replayfloor mmapcrc FILE  map the file, CRC32C over it in 64 KiB spans, unmap
//	replayfloor mmapcrc2 FILE the same, each half of the file on a goroutine
//	replayfloor pack FILE     pack.OpenWith and ReadInto of every frame (both
//	                          CRCs, the meta decoded), touching every message's
//	                          data: the read loop under replay, one goroutine
//	replayfloor pack2 FILE    the same with two read-ahead helpers, as replay
package main

import (
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"syscall"

	"github.com/edr-lite/edr-lite/pack"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: replayfloor none|read|readcrc|mmapcrc|mmapcrc2|pack|pack2 FILE")
		os.Exit(2)
	}
	mode, path := os.Args[1], os.Args[2]
	sum, err := run(mode, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if sum == 1 { // keep the work
		fmt.Println(sum)
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func run(mode, path string) (uint64, error) {
	switch mode {
	case "none":
		return 0, nil
	case "read", "readcrc":
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		buf := make([]byte, 128<<10)
		var c uint32
		for {
			n, err := f.Read(buf)
			if mode == "readcrc" {
				c = crc32.Update(c, castagnoli, buf[:n])
			}
			if err == io.EOF {
				return uint64(c), nil
			}
			if err != nil {
				return 0, err
			}
		}
	case "mmapcrc", "mmapcrc2":
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return 0, err
		}
		b, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			return 0, err
		}
		crcOf := func(b []byte) uint32 {
			var c uint32
			for i := 0; i < len(b); i += 64 << 10 {
				c = crc32.Update(c, castagnoli, b[i:min(i+64<<10, len(b))])
			}
			return c
		}
		var c uint32
		if mode == "mmapcrc2" {
			half := len(b) / 2
			other := make(chan uint32)
			go func() { other <- crcOf(b[half:]) }()
			c = crcOf(b[:half]) ^ <-other
		} else {
			c = crcOf(b)
		}
		return uint64(c), syscall.Munmap(b)
	case "pack", "pack2":
		opts := pack.ReaderOptions{}
		if mode == "pack2" {
			opts.ReadAhead = 2
		}
		r, err := pack.OpenWith(path, opts)
		if err != nil {
			return 0, err
		}
		defer r.Close()
		var f pack.Frame
		var n uint64
		for {
			if err := r.ReadInto(&f); err == io.EOF {
				return n, nil
			} else if err != nil {
				return 0, err
			}
			for i := range f.Len() {
				n += uint64(len(f.Data(i)))
			}
		}
	}
	return 0, fmt.Errorf("unknown mode %q", mode)
}
