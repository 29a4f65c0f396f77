package pack

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sensorData returns n bytes of semi-structured sensor-like data: records of
// a timestamp, an id and slowly varying little-endian floats and ints.
func sensorData(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, 0, n+64)
	ts := uint64(1_700_000_000_000_000_000)
	v := [6]float32{}
	for len(b) < n {
		ts += 10_000_000 + uint64(rng.IntN(1000))
		b = binary.LittleEndian.AppendUint64(b, ts)
		b = binary.LittleEndian.AppendUint32(b, 0x1234)
		for i := range v {
			v[i] += float32(rng.NormFloat64() * 0.01)
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(v[i]*1000)))
		}
		b = binary.LittleEndian.AppendUint16(b, uint16(rng.IntN(4)))
	}
	return b[:n]
}

func randomData(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 2))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	return b
}

// benchFrames returns frames of `msgs` messages of `size` bytes each.
func benchFrames(nframes, msgs, size int, data []byte) []*Frame {
	out := make([]*Frame, nframes)
	p := 0
	for i := range out {
		t := int64(1_700_000_000_000_000_000) + int64(i)*10_000_000
		f := NewFrame(uint64(i), t)
		for m := 0; m < msgs; m++ {
			if p+size > len(data) {
				p = 0
			}
			f.AddMetaBorrowed("sensor/imu", "0", nil, t+int64(m), t+int64(m)+1, data[p:p+size])
			p += size
		}
		out[i] = f
	}
	return out
}

var sinkInt int

// BenchmarkWriteDurable compares, in one run, the durable write of the
// same bytes: the mmap writer (tuned and naive), the stream writer over an
// os.File, and the baselines fallocate+write+fsync and write+fsync of the
// pre-encoded file.
func BenchmarkWriteDurable(b *testing.B) {
	const fileSize = 128 << 20
	for _, frameSize := range []int{64 << 10, 1 << 20} {
		data := sensorData(4<<20, 1)
		frames := benchFrames(fileSize/frameSize, 1, frameSize, data)
		var enc bytes.Buffer
		sw, _ := NewStreamWriter(&enc, WriterOptions{CreatedNs: 1})
		for _, f := range frames {
			sw.WriteFrame(f)
		}
		sw.Close()
		encoded := enc.Bytes()
		dir := b.TempDir()
		path := filepath.Join(dir, "bench.pack")
		writeAll := func(b *testing.B, opts WriterOptions) {
			w, err := Create(path, opts)
			if err != nil {
				b.Fatal(err)
			}
			for _, f := range frames {
				if err := w.WriteFrame(f); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
		run := func(name string, fn func(b *testing.B)) {
			b.Run(fmt.Sprintf("frame=%dKiB/%s", frameSize>>10, name), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(encoded)))
				for b.Loop() {
					os.Remove(path)
					fn(b)
				}
			})
		}
		run("mmap", func(b *testing.B) { writeAll(b, WriterOptions{CreatedNs: 1, Mmap: true}) })
		run("mmap-naive", func(b *testing.B) {
			writeAll(b, WriterOptions{CreatedNs: 1, Mmap: true, NoPrefault: true, NoAsyncWriteback: true})
		})
		run("write", func(b *testing.B) { writeAll(b, WriterOptions{CreatedNs: 1}) })
		run("stream-file", func(b *testing.B) {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			w, _ := NewStreamWriter(f, WriterOptions{CreatedNs: 1})
			for _, fr := range frames {
				w.WriteFrame(fr)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		})
		for _, falloc := range []bool{true, false} {
			name := "baseline=write+fsync"
			if falloc {
				name = "baseline=fallocate+write+fsync"
			}
			run(name, func(b *testing.B) {
				f, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				if falloc {
					unix.Fallocate(int(f.Fd()), 0, 0, int64(len(encoded)))
				}
				for p := 0; p < len(encoded); p += 1 << 20 {
					if _, err := f.Write(encoded[p:min(p+1<<20, len(encoded))]); err != nil {
						b.Fatal(err)
					}
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				f.Close()
			})
		}
	}
}

// BenchmarkRead reads a 64 MiB file of 1 KiB messages (16 per frame) from
// the page cache: with data, meta only, and a same-run copy of the file's
// bytes as the baseline.
func BenchmarkRead(b *testing.B) {
	const msgs, size = 16, 1024
	data := sensorData(8<<20, 3)
	nframes := (64 << 20) / (msgs * size)
	frames := benchFrames(nframes, msgs, size, data)
	for _, c := range []Compression{CompressNone, CompressLZ4, CompressZstd} {
		path := filepath.Join(b.TempDir(), "read.pack")
		writeFile(b, path, frames, WriterOptions{Compression: c})
		raw := int64(nframes * msgs * size)
		for _, mode := range []string{"data", "meta"} {
			if c != CompressNone && mode == "meta" {
				continue
			}
			b.Run(fmt.Sprintf("codec=%v/%s", c, mode), func(b *testing.B) {
				r, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				read := r.ReadInto
				if mode == "meta" {
					read = r.ReadMetaInto
				}
				var f Frame
				b.ReportAllocs()
				b.SetBytes(raw)
				n := 0
				for b.Loop() {
					r.Rewind()
					for {
						err := read(&f)
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						n += f.Len()
					}
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
				sinkInt = n
			})
		}
	}
	b.Run("baseline=copy", func(b *testing.B) {
		src := bytes.Repeat(data, 8)
		dst := make([]byte, len(src))
		b.SetBytes(int64(len(src)))
		b.ReportAllocs()
		for b.Loop() {
			copy(dst, src)
		}
	})
}

// BenchmarkSeekTime seeks by time in a file of 10^5 frames.
func BenchmarkSeekTime(b *testing.B) {
	const n = 100_000
	var buf bytes.Buffer
	w, _ := NewStreamWriter(&buf, WriterOptions{CreatedNs: 1})
	f := NewFrame(0, 0)
	for i := 0; i < n; i++ {
		f.Reset(uint64(i), int64(i)*1000)
		f.AddMeta("t", "", []byte{1, 2, 3}, int64(i)*1000, 0)
		w.WriteFrame(f)
	}
	w.Close()
	path := filepath.Join(b.TempDir(), "seek.pack")
	os.WriteFile(path, buf.Bytes(), 0o644)
	r, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	targets := make([]int64, 4096)
	for i := range targets {
		targets[i] = rng.Int64N(n * 1000)
	}
	b.Run("first", func(b *testing.B) { // a new Reader's first seek reads every frame's meta once
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			r2, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			r2.SeekTime(targets[i&4095])
			r2.Close()
			i++
		}
	})
	b.Run("index", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			r.SeekTime(targets[i&4095])
			i++
		}
	})
	b.Run("index+read", func(b *testing.B) {
		b.ReportAllocs()
		var fr Frame
		i := 0
		for b.Loop() {
			r.SeekTime(targets[i&4095])
			if err := r.ReadMetaInto(&fr); err != nil && err != io.EOF {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("baseline=sort.Search-slice", func(b *testing.B) {
		times := make([]int64, n)
		for i := range times {
			times[i] = int64(i) * 1000
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			t := targets[i&4095]
			sinkInt = sort.Search(n, func(k int) bool { return times[k] >= t })
			i++
		}
	})
}

// BenchmarkCompress: lz4 and zstd on 1 MiB frames of sensor-like and random
// data, compress and decompress, with the ratio; baseline is a plain copy.
func BenchmarkCompress(b *testing.B) {
	for _, kind := range []string{"sensor", "random"} {
		var src []byte
		if kind == "sensor" {
			src = sensorData(1<<20, 5)
		} else {
			src = randomData(1<<20, 5)
		}
		for _, c := range []Compression{CompressLZ4, CompressZstd} {
			cs := newCodecs()
			comp, err := cs.compress(c, nil, src)
			if err != nil {
				b.Fatal(err)
			}
			ratio := float64(len(src)) / float64(max(len(comp), 1))
			b.Run(fmt.Sprintf("data=%s/codec=%v/compress", kind, c), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(src)))
				dst := make([]byte, 0, 2<<20)
				for b.Loop() {
					dst, _ = cs.compress(c, dst[:0], src)
				}
				b.ReportMetric(ratio, "ratio")
			})
			if len(comp) == 0 {
				continue // incompressible: stored raw
			}
			b.Run(fmt.Sprintf("data=%s/codec=%v/decompress", kind, c), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(src)))
				dst := make([]byte, len(src))
				for b.Loop() {
					if _, reason := cs.decompress(c, dst, comp, len(src)); reason != "" {
						b.Fatal(reason)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("data=%s/baseline=copy", kind), func(b *testing.B) {
			dst := make([]byte, len(src))
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				copy(dst, src)
			}
		})
	}
}

// BenchmarkFrameCache: random access (seek to a random frame and read it)
// and one sequential pass over a zstd file, with and without the cache.
func BenchmarkFrameCache(b *testing.B) {
	data := sensorData(8<<20, 9)
	frames := benchFrames(256, 16, 4096, data) // 64 KiB per frame, 16 MiB
	path := filepath.Join(b.TempDir(), "z.pack")
	writeFile(b, path, frames, WriterOptions{Compression: CompressZstd})
	for _, pattern := range []string{"random", "sequential"} {
		for _, cached := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/cache=%v", pattern, cached), func(b *testing.B) {
				var opts ReaderOptions
				if cached {
					fc, err := NewFrameCache(64 << 20)
					if err != nil {
						b.Fatal(err)
					}
					defer fc.Close()
					opts.Cache = fc
				}
				r, err := OpenWith(path, opts)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				offs := r.FrameOffsets()
				rng := rand.New(rand.NewPCG(2, 2))
				var f Frame
				b.ReportAllocs()
				b.SetBytes(64 << 10)
				i := 0
				for b.Loop() {
					if pattern == "random" {
						r.SeekFrame(offs[rng.IntN(len(offs))])
					} else if i%len(offs) == 0 {
						if cached {
							// A single pass: a fresh reader id so nothing is reused.
							r.id = readerIDs.Add(1)
						}
						r.Rewind()
					}
					if err := r.ReadInto(&f); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkWriteDurableRounds is the same comparison as
// BenchmarkWriteDurable run as interleaved rounds (every variant once per
// iteration, in rotating order) so that disk noise from other processes
// hits all variants alike; it reports each variant's median MB/s and the
// ratio of the mmap writer to the best write(2) path.
func BenchmarkWriteDurableRounds(b *testing.B) {
	const fileSize = 64 << 20
	const frameSize = 256 << 10
	data := sensorData(4<<20, 1)
	frames := benchFrames(fileSize/frameSize, 1, frameSize, data)
	var enc bytes.Buffer
	sw, _ := NewStreamWriter(&enc, WriterOptions{CreatedNs: 1})
	for _, f := range frames {
		sw.WriteFrame(f)
	}
	sw.Close()
	encoded := enc.Bytes()
	path := filepath.Join(b.TempDir(), "bench.pack")
	createWith := func(opts WriterOptions) func() error {
		return func() error {
			w, err := Create(path, opts)
			if err != nil {
				return err
			}
			for _, f := range frames {
				if err := w.WriteFrame(f); err != nil {
					return err
				}
			}
			return w.Close()
		}
	}
	writeWith := func(falloc, kick bool) func() error {
		return func() error {
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			defer f.Close()
			if falloc {
				unix.Fallocate(int(f.Fd()), 0, 0, int64(len(encoded)))
			}
			kicked := 0
			for p := 0; p < len(encoded); p += 1 << 20 {
				e := min(p+1<<20, len(encoded))
				if _, err := f.Write(encoded[p:e]); err != nil {
					return err
				}
				if kick && e-kicked >= writebackChunk {
					unix.SyncFileRange(int(f.Fd()), int64(kicked), int64(e-kicked), unix.SYNC_FILE_RANGE_WRITE)
					kicked = e
				}
			}
			return f.Sync()
		}
	}
	variants := []struct {
		name string
		fn   func() error
	}{
		{"pack-Mmap", createWith(WriterOptions{CreatedNs: 1, Mmap: true})},
		{"mmap-naive", createWith(WriterOptions{CreatedNs: 1, Mmap: true, NoPrefault: true, NoAsyncWriteback: true, NoHugePages: true})},
		{"fallocate+write+fsync", writeWith(true, false)},
		{"write+fsync", writeWith(false, false)},
		{"fallocate+write+syncfilerange+fsync", writeWith(true, true)},
		{"pack-write", createWith(WriterOptions{CreatedNs: 1})},
		{"mmap-nohuge", createWith(WriterOptions{CreatedNs: 1, Mmap: true, NoHugePages: true})},
		{"mmap-win16M", createWith(WriterOptions{CreatedNs: 1, Mmap: true, Window: 16 << 20})},
		{"mmap-fgprefault", createWith(WriterOptions{CreatedNs: 1, Mmap: true, NoBackgroundPrefault: true})},
	}
	durs := make([][]float64, len(variants))
	round := 0
	b.SetBytes(int64(len(encoded)) * int64(len(variants)))
	for b.Loop() {
		for k := range variants {
			v := (k + round) % len(variants)
			os.Remove(path)
			start := nowNs()
			if err := variants[v].fn(); err != nil {
				b.Fatal(err)
			}
			durs[v] = append(durs[v], float64(nowNs()-start))
		}
		round++
	}
	mbps := make([]float64, len(variants))
	for v := range variants {
		sort.Float64s(durs[v])
		mbps[v] = float64(len(encoded)) / 1e6 / (durs[v][len(durs[v])/2] / 1e9)
		b.ReportMetric(mbps[v], variants[v].name+"-MB/s")
	}
	best := max(mbps[2], mbps[3], mbps[4])
	b.ReportMetric(mbps[0]/best, "Mmap/best-write")
	b.ReportMetric(mbps[1]/best, "naive/best-write")
	b.ReportMetric(mbps[5]/best, "pack-write/best-write")
	b.ReportMetric(mbps[8]/best, "fgprefault/best-write")
	b.ReportMetric(mbps[0]/mbps[5], "Mmap/pack-write")
}

func nowNs() int64 { return time.Now().UnixNano() }

// BenchmarkMeta encodes and decodes the meta of a frame of 16 messages.
func BenchmarkMeta(b *testing.B) {
	f := benchFrames(1, 16, 1024, sensorData(1<<20, 4))[0]
	for i := 0; i < 16; i++ {
		f.msgs[i].Meta = []byte("0123456789abcdef0123456789abcdef")
	}
	enc := f.AppendMeta(nil)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		buf := make([]byte, 0, len(enc))
		for b.Loop() {
			buf = f.AppendMeta(buf[:0])
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		var g Frame
		for b.Loop() {
			if err := g.UnmarshalMeta(enc); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*16)/b.Elapsed().Seconds(), "msgs/s")
	})
}

// BenchmarkMetaReplay decodes the meta of a frame as the replay gate's dump
// holds them (TestReplaySpeedGate): 1024 messages of 4 topics taking turns,
// nanosecond gen and done times, no meta bytes, a data index each.
func BenchmarkMetaReplay(b *testing.B) {
	f := NewFrame(1, 1_700_000_000_000_000_000)
	names := []string{"topic/0", "topic/1", "topic/2", "topic/3"}
	for i := 0; i < 1024; i++ {
		ts := int64(1_700_000_000_000_000_000) + int64(i)*1000
		f.AddMetaBorrowed(names[i%4], "", nil, ts, ts, []byte("0123456789abcdef"))
	}
	enc := f.AppendMeta(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	var g Frame
	for b.Loop() {
		if err := g.UnmarshalMeta(enc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/msg")
}
