package bench

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/demodump"
	"github.com/edr-lite/edr-lite/internal/testutil"
	"github.com/edr-lite/edr-lite/pack"
)

// boundsMsg is one message of a frame-bounds corpus.
type boundsMsg struct {
	topic string
	ns    int64
	data  []byte
}

// demoCorpus is the demo dump's messages (internal/demodump: 5 s, a
// 320x200 JPEG camera at 30 Hz, IMU at 200 Hz, speed, brake pedal).
func demoCorpus(t *testing.T) []boundsMsg {
	p := filepath.Join(t.TempDir(), "demo.pack")
	if err := demodump.WritePack(p); err != nil {
		t.Fatal(err)
	}
	r, err := pack.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []boundsMsg
	var f pack.Frame
	for {
		if err := r.ReadInto(&f); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		for i := range f.Len() {
			m := f.Message(i)
			out = append(out, boundsMsg{pack.Topic(m.Name, m.Channel), pack.MessageTime(&m, f.Time()), bytes.Clone(f.Data(i))})
		}
	}
}

// vehicleCorpus is 10 s of a heavier vehicle: a lidar at 10 Hz (100 KiB
// of smooth float32 ranges with noise), a camera at 30 Hz (40 KiB that do
// not compress, as JPEG), CAN frames at 1 kHz (16 B), an IMU at 200 Hz
// (24 B): about 2.2 MB/s.
func vehicleCorpus() []boundsMsg {
	rng := rand.New(rand.NewPCG(1, 2))
	const t0 = int64(1_800_000_000_000_000_000)
	var out []boundsMsg
	for ms := int64(0); ms < 10_000; ms++ {
		ns := t0 + ms*1e6
		if ms%100 == 0 {
			b := make([]byte, 0, 100<<10)
			for i := range 25 << 10 {
				v := 20 + 5*math.Sin(float64(i)/300+float64(ms)/500) + rng.Float64()*0.05
				b = append(b, byte(int(v*100)), byte(int(v*100)>>8), 0x41, 0)
			}
			out = append(out, boundsMsg{"lidar/top#", ns, b})
		}
		if ms%33 == 0 {
			b := make([]byte, 40<<10)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			out = append(out, boundsMsg{"camera/front#", ns + 1, b})
		}
		out = append(out, boundsMsg{"can/frame#can0", ns + 2, []byte{byte(ms), byte(ms >> 8), 0, 1, 2, 3, byte(ms % 7), 0, 0, 0, 0, 0, 0, 0, 0, 1}})
		if ms%5 == 0 {
			b := make([]byte, 24)
			b[0], b[4] = byte(ms), byte(rng.IntN(4))
			out = append(out, boundsMsg{"vehicle/imu#", ns + 3, b})
		}
	}
	return out
}

// writeBounds writes msgs with Add in frames bounded by size and span.
func writeBounds(t *testing.T, msgs []boundsMsg, size int, span time.Duration, c pack.Compression) []byte {
	var buf bytes.Buffer
	w, err := pack.NewStreamWriter(&buf, pack.WriterOptions{TargetFrameSize: size, TargetFrameSpan: span, Compression: c, CreatedNs: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		name, ch := pack.SplitTopic(m.topic)
		if err := w.Add(name, ch, nil, m.ns-1000, m.ns, m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// boundsLoss is what one flipped byte (or a cut) at a uniformly random
// offset of the frames costs, in expectation: the frame it falls in, so
// each frame weighs by its share of the file.
type boundsLoss struct {
	frames      int
	msgs, bytes float64
	span        time.Duration
}

func lossOf(t *testing.T, b []byte) boundsLoss {
	r, err := pack.NewBytesReader("x", b, pack.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	offs := append(r.FrameOffsets(), 0)
	var l boundsLoss
	var f pack.Frame
	size := float64(len(b))
	var spanW float64
	for i := 0; ; i++ {
		if err := r.ReadMetaInto(&f); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		end := r.Tell()
		rec := float64(end - offs[i])
		w := rec / size
		l.frames++
		l.msgs += w * float64(f.Len())
		l.bytes += w * rec
		first, last := int64(math.MaxInt64), int64(math.MinInt64)
		for j := range f.Len() {
			m := f.Message(j)
			tm := pack.MessageTime(&m, f.Time())
			first, last = min(first, tm), max(last, tm)
		}
		spanW += w * float64(last-first)
	}
	l.span = time.Duration(spanW)
	return l
}

// readAllFrames reads b whole, passes times.
func readAllFrames(b []byte, passes int) {
	for range passes {
		r, _ := pack.NewBytesReader("x", b, pack.ReaderOptions{})
		var f pack.Frame
		for r.ReadInto(&f) == nil {
			sink += f.Len()
		}
	}
}

// TestFrameBoundsTable prints docs/pack.md's "Frame bounds" table: for each
// pair of bounds (data size, time span) and corpus, the frames and index
// size, the file size and the lz4 and zstd compression ratios, the read
// speed (uncompressed and zstd, as a same-run ratio to 1 MiB frames bounded
// by size only, median of 9 interleaved rounds of about 64 MB read) and what one damaged byte
// or a cut costs in expectation (the frame it falls in: messages, bytes,
// time spanned).
//
//	EDR_FRAME_TABLE=1 go test -count=1 -run TestFrameBoundsTable -v ./bench/
func TestFrameBoundsTable(t *testing.T) {
	if os.Getenv("EDR_FRAME_TABLE") != "1" {
		t.Skip("a measurement (docs/pack.md, Frame bounds): EDR_FRAME_TABLE=1")
	}
	type bounds struct {
		size int
		span time.Duration
	}
	cands := []bounds{{1 << 20, -1}, {1 << 20, time.Second}, {1 << 20, 500 * time.Millisecond}, {1 << 20, 250 * time.Millisecond},
		{1 << 20, 100 * time.Millisecond}, {256 << 10, -1}, {256 << 10, 250 * time.Millisecond}, {64 << 10, -1},
		{64 << 10, 100 * time.Millisecond}, {16 << 10, 100 * time.Millisecond}}
	name := func(b bounds) string {
		s := fmt.Sprintf("%d KiB", b.size>>10)
		if b.span > 0 {
			s += ", " + b.span.String()
		}
		return s
	}
	for _, corpus := range []struct {
		name string
		msgs []boundsMsg
	}{{"demo", demoCorpus(t)}, {"vehicle", vehicleCorpus()}} {
		var payload int
		for _, m := range corpus.msgs {
			payload += len(m.data)
		}
		base := writeBounds(t, corpus.msgs, 1<<20, -1, pack.CompressNone)
		baseZ := writeBounds(t, corpus.msgs, 1<<20, -1, pack.CompressZstd)
		var rows []string
		for _, c := range cands {
			raw := writeBounds(t, corpus.msgs, c.size, c.span, pack.CompressNone)
			lz := writeBounds(t, corpus.msgs, c.size, c.span, pack.CompressLZ4)
			zs := writeBounds(t, corpus.msgs, c.size, c.span, pack.CompressZstd)
			passes := max(1, (64<<20)/len(raw)) // about 64 MB a timing
			rd, _, _ := testutil.SameRunRatio(9, func() { readAllFrames(raw, passes) }, func() { readAllFrames(base, passes) })
			rz, _, _ := testutil.SameRunRatio(9, func() { readAllFrames(zs, passes/4+1) }, func() { readAllFrames(baseZ, passes/4+1) })
			l := lossOf(t, raw)
			rows = append(rows, fmt.Sprintf("| %s | %s | %d | %d B | %.4f | %.2f | %.2f | %.2f | %.2f | %.1f msgs, %.0f KiB, %v |",
				corpus.name, name(c), l.frames, l.frames*pack.IndexEntrySize, float64(len(raw))/float64(len(base)),
				float64(payload)/float64(len(lz)), float64(payload)/float64(len(zs)), rd, rz, l.msgs, l.bytes/1024, l.span.Round(time.Millisecond)))
		}
		t.Logf("%s: %d messages, %.1f MB of payload\n| corpus | bounds | frames | index | size / 1 MiB frames | lz4 ratio | zstd ratio | read / 1 MiB frames | zstd read / 1 MiB | one damaged byte costs (expected) |\n|---|---|---|---|---|---|---|---|---|---|\n%s",
			corpus.name, len(corpus.msgs), float64(payload)/1e6, strings.Join(rows, "\n"))
	}
}
