package replay

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/shm"
)

// benchDump writes about 16 MiB of size-byte messages over 4 topics, 1 ms
// apart, and opens it.
func benchDump(b *testing.B, size int) (*pack.Reader, int, int64) {
	n := max(16<<20/size, 1000)
	if n > 200000 {
		n = 200000
	}
	msgs := make([]rec, n)
	data := fixedPayload(size)
	for i := range msgs {
		ts := t0 + int64(i)*1e6
		msgs[i] = rec{name: fmt.Sprintf("topic/%d", i%4), gen: ts, done: ts, data: data}
	}
	r, err := pack.Open(writeDump(b, "bench.pack", msgs, nil))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r, n, int64(n * size)
}

var benchSink uint64

func fixedPayload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

// BenchmarkReplayAsFast replays a dump as fast as possible to a discard
// output and to shm segments (no consumer: the producer overwrites), beside
// two same-run baselines: reading the dump with pack.Reader.ReadInto alone,
// and publishing the same messages straight into shm producers. One op is
// one pass over the dump; msg/s and MB/s are per pass.
func BenchmarkReplayAsFast(b *testing.B) {
	for _, size := range []int{64, 1024, 65536} {
		r, n, bytes := benchDump(b, size)
		report := func(b *testing.B) {
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msg/s")
		}
		b.Run(fmt.Sprintf("out=discard/size=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(bytes)
			for b.Loop() {
				p, err := New([]*pack.Reader{r}, Options{})
				if err != nil {
					b.Fatal(err)
				}
				st, err := p.Run(context.Background(), Discard{})
				if err != nil || st.Messages != uint64(n) {
					b.Fatal(err, st.Messages)
				}
				benchSink += st.Bytes
			}
			report(b)
		})
		b.Run(fmt.Sprintf("out=shm/size=%d", size), func(b *testing.B) {
			dir := b.TempDir()
			b.ReportAllocs()
			b.SetBytes(bytes)
			for b.Loop() {
				p, err := New([]*pack.Reader{r}, Options{})
				if err != nil {
					b.Fatal(err)
				}
				st, err := p.Run(context.Background(), NewShm(ShmOptions{Dir: dir, Capacity: 4 << 20}))
				if err != nil || st.Messages != uint64(n) {
					b.Fatal(err, st.Messages)
				}
				benchSink += st.Bytes
			}
			report(b)
		})
		b.Run(fmt.Sprintf("baseline=read/size=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(bytes)
			var f pack.Frame
			for b.Loop() {
				r.Rewind()
				for {
					if err := r.ReadInto(&f); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
					for i := 0; i < f.Len(); i++ {
						benchSink += uint64(len(f.Data(i)))
					}
				}
			}
			report(b)
		})
		b.Run(fmt.Sprintf("baseline=publish/size=%d", size), func(b *testing.B) {
			dir := b.TempDir()
			data := fixedPayload(size)
			b.ReportAllocs()
			b.SetBytes(bytes)
			for b.Loop() {
				var ps [4]*shm.Producer
				for i := range ps {
					var err error
					ps[i], err = shm.NewProducer(dir, shm.ProducerOptions{Name: fmt.Sprintf("topic/%d", i), Capacity: 4 << 20})
					if err != nil {
						b.Fatal(err)
					}
				}
				for i := 0; i < n; i++ {
					if err := ps[i%4].Publish(int64(i), data); err != nil {
						b.Fatal(err)
					}
				}
				for _, p := range ps {
					p.Close()
				}
			}
			report(b)
		})
	}
}

// BenchmarkTimingError replays 300 messages 1 ms apart in real time and at
// rate 10 to a discard output and reports the player's timing error
// (p50-ns, p99-ns, max-ns: how late messages were handed over), sleeping
// only (spin=0s, the default) and with spin windows of 200µs and 2ms. Wall-clock figures: read, never
// gate on them.
func BenchmarkTimingError(b *testing.B) {
	msgs := make([]rec, 300)
	for i := range msgs {
		ts := t0 + int64(i)*1e6
		msgs[i] = rec{name: "t", gen: ts, done: ts, data: []byte{1}}
	}
	r, err := pack.Open(writeDump(b, "timing.pack", msgs, nil))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for _, rate := range []float64{1, 10} {
		for _, spin := range []time.Duration{0, 200 * time.Microsecond, 2 * time.Millisecond} {
			b.Run(fmt.Sprintf("rate=%g/spin=%v", rate, spin), func(b *testing.B) {
				h := &hist{}
				for b.Loop() {
					p, err := New([]*pack.Reader{r}, Options{Rate: rate, Spin: spin})
					if err != nil {
						b.Fatal(err)
					}
					ph := &hist{}
					if err := p.run(context.Background(), Discard{}, &Stats{}, ph); err != nil {
						b.Fatal(err)
					}
					for i, c := range ph.counts {
						h.counts[i] += c
					}
					h.n += ph.n
					h.max = max(h.max, ph.max)
				}
				b.ReportMetric(float64(h.quantile(0.5)), "p50-ns")
				b.ReportMetric(float64(h.quantile(0.99)), "p99-ns")
				b.ReportMetric(float64(h.max), "max-ns")
			})
		}
	}
}
