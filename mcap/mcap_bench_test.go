package mcap

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/demo"
	"github.com/edr-lite/edr-lite/pack"
)

// grayFrame is the n-th frame of a raw 512×400 gray camera: a moving
// gradient with the frame number in the first 8 bytes (the demo's camera
// before it sent JPEGs).
func grayFrame(n uint64) []byte {
	buf := make([]byte, 512*400)
	for i := range buf {
		buf[i] = byte(i + int(n)*3)
	}
	binary.LittleEndian.PutUint64(buf, n)
	return buf
}

// benchWorkload is two simulated seconds of the demo vehicle (speed, brake,
// IMU, 200 KiB camera frames), in time order. noisy replaces the camera's
// smooth gradient with sensor noise in the low bits, which compresses far
// less (closer to a real image).
func benchWorkload(noisy bool) (topics []Topic, msgs []Message, payload int64) {
	v := demo.DefaultVehicle()
	const span = 2 * time.Second
	var next []time.Duration
	for _, tp := range demo.Topics {
		if tp.Latched {
			continue
		}
		topics = append(topics, Topic{Name: tp.Name, Type: ingest.Raw(tp.Type.Schema.Name)})
		next = append(next, 0)
	}
	counts := make([]uint64, len(topics))
	rng := uint32(2463534242)
	for {
		// earliest next message over all topics
		k := 0
		for i := range next {
			if next[i] < next[k] {
				k = i
			}
		}
		if next[k] >= span {
			break
		}
		tp := demo.Topics[k]
		var data []byte
		if tp.Name == demo.TopicCamera {
			data = grayFrame(counts[k]) // the figures in docs/performance.md are of these
		} else {
			data = v.Payload(nil, tp, next[k], counts[k])
		}
		if noisy && tp.Name == demo.TopicCamera {
			for i := 8; i < len(data); i++ {
				rng ^= rng << 13
				rng ^= rng >> 17
				rng ^= rng << 5
				data[i] = data[i]&0xF0 | byte(rng)&0x0F
			}
		}
		ts := uint64(1_700_000_000e9) + uint64(next[k])
		msgs = append(msgs, Message{ChannelID: uint16(k), Sequence: uint32(counts[k]), LogTime: ts, PublishTime: ts, Data: data})
		payload += int64(len(data))
		counts[k]++
		next[k] += time.Duration(float64(time.Second) / tp.Hz)
	}
	return topics, msgs, payload
}

var benchSink int64

func writeWorkload(b *testing.B, w *Writer, topics []Topic, msgs []Message) {
	for _, tp := range topics {
		if _, err := w.AddTopic(tp); err != nil {
			b.Fatal(err)
		}
	}
	for i := range msgs {
		if err := w.WriteMessage(&msgs[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// packCompression maps an MCAP compression name to pack's codec.
var packCompression = map[string]pack.Compression{
	CompressionNone: pack.CompressNone, CompressionLZ4: pack.CompressLZ4, CompressionZstd: pack.CompressZstd}

// BenchmarkWrite measures writing the same messages as MCAP and as pack, per
// compression, to io.Discard (encoding cost) and to a durable dump file
// through each format's mmap file writer (sink=file: FileOptions.Mmap,
// WriterOptions.Mmap; fsync'd and renamed by Close), and for MCAP also
// through its default buffered write(2) path (sink=file-write),
// beside a same-run baseline: the payload bytes written to a file with
// write(2) and fsync. MB/s counts payload bytes; size-ratio is file bytes
// per payload byte.
func BenchmarkWrite(b *testing.B) {
	for _, noisy := range []bool{false, true} {
		topics, msgs, payload := benchWorkload(noisy)
		wl := map[bool]string{false: "demo", true: "noisy"}[noisy]
		b.Run(fmt.Sprintf("data=%s/baseline=write+fsync", wl), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "raw")
			b.SetBytes(payload)
			b.ReportAllocs()
			cpu := startCPU()
			defer func() { cpu.report(b, payload) }()
			for b.Loop() {
				f, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				for i := range msgs {
					if _, err := f.Write(msgs[i].Data); err != nil {
						b.Fatal(err)
					}
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
		for _, sink := range []string{"discard", "file", "file-write"} {
			for _, comp := range compressions {
				name := comp
				if name == "" {
					name = "none"
				}
				b.Run(fmt.Sprintf("data=%s/sink=%s/format=mcap/compression=%s", wl, sink, name), func(b *testing.B) {
					path := filepath.Join(b.TempDir(), "dump.mcap")
					b.SetBytes(payload)
					b.ReportAllocs()
					var size int64
					cpu := startCPU()
					for b.Loop() {
						if sink == "discard" {
							w, err := NewWriter(io.Discard, Options{Compression: comp})
							if err != nil {
								b.Fatal(err)
							}
							writeWorkload(b, w, topics, msgs)
							if err := w.Close(); err != nil {
								b.Fatal(err)
							}
							size = w.Written()
							continue
						}
						fw, err := Create(path, FileOptions{Options: Options{Compression: comp}, Mmap: sink != "file-write"})
						if err != nil {
							b.Fatal(err)
						}
						writeWorkload(b, fw.Writer, topics, msgs)
						if err := fw.Close(); err != nil {
							b.Fatal(err)
						}
						size = fw.Written()
					}
					cpu.report(b, payload)
					benchSink += size
					b.ReportMetric(float64(size)/float64(payload), "size-ratio")
				})
				if sink == "file-write" {
					continue // pack has no write(2) file writer
				}
				b.Run(fmt.Sprintf("data=%s/sink=%s/format=pack/compression=%s", wl, sink, name), func(b *testing.B) {
					path := filepath.Join(b.TempDir(), "dump.pack")
					opts := pack.WriterOptions{Compression: packCompression[comp]}
					b.SetBytes(payload)
					b.ReportAllocs()
					var size int64
					cpu := startCPU()
					for b.Loop() {
						var w *pack.Writer
						var err error
						if sink == "discard" {
							w, err = pack.NewStreamWriter(io.Discard, opts)
						} else {
							w, err = pack.Create(path, opts)
						}
						if err != nil {
							b.Fatal(err)
						}
						for i := range msgs {
							m := &msgs[i]
							tp := &topics[m.ChannelID]
							if err := w.Add(tp.Name, tp.Channel, nil, int64(m.PublishTime), int64(m.LogTime), m.Data); err != nil {
								b.Fatal(err)
							}
						}
						if err := w.Close(); err != nil {
							b.Fatal(err)
						}
						size = w.Offset()
					}
					cpu.report(b, payload)
					if sink == "file" {
						st, err := os.Stat(path)
						if err != nil {
							b.Fatal(err)
						}
						size = st.Size()
					}
					benchSink += size
					b.ReportMetric(float64(size)/float64(payload), "size-ratio")
				})
			}
		}
	}
}

// BenchmarkRead measures reading every message back (decompressing).
func BenchmarkRead(b *testing.B) {
	topics, msgs, payload := benchWorkload(true)
	for _, comp := range compressions {
		name := comp
		if name == "" {
			name = "none"
		}
		b.Run("compression="+name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "dump.mcap")
			fw, err := Create(path, FileOptions{Options: Options{Compression: comp}})
			if err != nil {
				b.Fatal(err)
			}
			writeWorkload(b, fw.Writer, topics, msgs)
			if err := fw.Close(); err != nil {
				b.Fatal(err)
			}
			r, err := Open(path, ReaderOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.SetBytes(payload)
			b.ReportAllocs()
			for b.Loop() {
				var n int64
				if err := r.Messages(func(_ *Channel, m *Message) error { n += int64(len(m.Data)); return nil }); err != nil {
					b.Fatal(err)
				}
				if n != payload {
					b.Fatalf("read %d bytes, want %d", n, payload)
				}
			}
		})
	}
}
