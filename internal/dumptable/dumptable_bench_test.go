package dumptable

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/demo"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/schema"
)

var sinkN int64

// demoLayouts type the demo's small topics as packed structs, as the demo
// will publish them.
var demoLayouts = map[string]string{
	demo.TopicSpeed: "f32le speed (m/s)\nu32le seq\n",
	demo.TopicBrake: "f32le pedal\n",
	demo.TopicIMU:   "f32le ax (m/s2); f32le ay (m/s2); f32le az (m/s2); f32le gx (rad/s); f32le gy (rad/s); f32le gz (rad/s)\n",
}

// demoLikeDump writes seconds of the demo vehicle's topics at their rates
// (camera frames of 200 KiB included unless noCamera) to a pack dump with
// a hard-brake trigger, and returns it with the layouts of its small
// topics.
func demoLikeDump(tb testing.TB, dir string, seconds int, noCamera bool) (string, map[string]schema.Type) {
	tb.Helper()
	p := filepath.Join(dir, fmt.Sprintf("demo-%ds-%v.pack", seconds, noCamera))
	w, err := pack.Create(p, pack.WriterOptions{Writer: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	v := demo.DefaultVehicle()
	const t0 = int64(1_796_000_000_000_000_000)
	type ev struct {
		t     time.Duration
		topic demo.Topic
		n     uint64
	}
	var evs []ev
	for _, tp := range demo.Topics {
		if tp.Latched {
			evs = append(evs, ev{0, tp, 0})
			continue
		}
		if noCamera && tp.Name == demo.TopicCamera {
			continue
		}
		for i := 0; i < int(float64(seconds)*tp.Hz); i++ {
			evs = append(evs, ev{time.Duration(float64(i) * float64(time.Second) / tp.Hz), tp, uint64(i)})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	var buf []byte
	for _, e := range evs {
		if e.topic.Name == demo.TopicCamera {
			buf = grayFrame(buf, e.n) // the figures in docs/performance.md are of these
		} else {
			buf = v.Payload(buf, e.topic, e.t, e.n)
		}
		ts := t0 + int64(e.t)
		if err := w.Add(e.topic.Name, "", nil, ts, ts, buf); err != nil {
			tb.Fatal(err)
		}
	}
	w.SetDumpInfo(dumpinfo.Info{StartNs: t0, EndNs: t0 + int64(seconds)*1e9, Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "hard-brake",
		TimeNs: t0 + 3e9, PreNs: 3e9, PostNs: 2e9}}})
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	files := map[string]string{}
	for topic, l := range demoLayouts {
		f := filepath.Join(dir, topic[len("vehicle/"):]+".layout")
		os.WriteFile(f, []byte(l), 0o644)
		files[topic] = f
	}
	types, err := config.LayoutSchemas(files, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return p, types
}

// exportRound exports src once to Parquet under out (then removed) and
// once as JSON lines to io.Discard, timed apart; it returns the seconds of
// each, the payload bytes and the Parquet rows.
func exportRound(tb testing.TB, src *dumpfile.Source, types map[string]schema.Type, out string) (tp, tj, bytes, rows float64) {
	t0 := time.Now()
	rep, err := Export(src, out, Options{Vehicle: "bench", Schemas: types, NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	t1 := time.Now()
	jr, err := dumpfile.Export(src, dumpfile.FormatJSONL, io.Discard, dumpfile.ExportOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	t2 := time.Now()
	os.RemoveAll(out)
	for _, f := range rep.Files {
		rows += float64(f.Rows)
	}
	sinkN += int64(jr.Messages)
	return t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds(), float64(rep.Bytes), rows
}

// exportFigures are the medians of exportRound over rounds.
type exportFigures struct {
	ParquetMBs, RowsPerS, JSONLMBs, Ratio float64
}

func figures(pq, jl []float64, bytes, rows float64) exportFigures {
	ratios := make([]float64, len(pq))
	for i := range pq {
		ratios[i] = jl[i] / pq[i]
	}
	return exportFigures{ParquetMBs: bytes / median(pq) / 1e6, RowsPerS: rows / median(pq), JSONLMBs: bytes / median(jl) / 1e6, Ratio: median(ratios)}
}

// openDemoLike makes and opens a demo-like dump: 5 s with the camera, or
// 120 s of the small topics only (enough rows to time rows, not files).
func openDemoLike(tb testing.TB, dir string, noCamera bool) (*dumpfile.Source, map[string]schema.Type) {
	seconds := 5
	if noCamera {
		seconds = 120
	}
	p, types := demoLikeDump(tb, dir, seconds, noCamera)
	src, err := dumpfile.Open(p)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { src.Close() })
	return src, types
}

// BenchmarkExportParquet converts a demo-like dump to Parquet (messages,
// dumps and three typed tables; written, not fsynced: the upload queue's
// conversion; the export verb fsyncs each file) and, in the same round,
// exports it as JSON lines to io.Discard (the same-run baseline: the other
// export of every message). It reports each in MB/s of the dump's payload
// bytes, Parquet in rows/s too, and the median over rounds of the
// per-round ratio parquet/jsonl (above 1: Parquet is faster).
func BenchmarkExportParquet(b *testing.B) {
	for _, noCamera := range []bool{false, true} {
		name := "demo-like"
		if noCamera {
			name = "small-topics-only"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			src, types := openDemoLike(b, dir, noCamera)
			var pq, jl []float64
			var bytes, rows float64
			b.ReportAllocs()
			round := 0
			for b.Loop() {
				tp, tj, by, r := exportRound(b, src, types, filepath.Join(dir, fmt.Sprintf("out%d", round)))
				round++
				pq, jl, bytes, rows = append(pq, tp), append(jl, tj), by, r
			}
			f := figures(pq, jl, bytes, rows)
			b.ReportMetric(f.ParquetMBs, "parquet-MB/s")
			b.ReportMetric(f.RowsPerS, "parquet-rows/s")
			b.ReportMetric(f.JSONLMBs, "jsonl-MB/s")
			b.ReportMetric(f.Ratio, "parquet/jsonl")
		})
	}
}

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// grayFrame is the n-th frame of a raw 512×400 gray camera (the demo's
// camera before it sent JPEGs): a moving gradient with the frame number in
// the first 8 bytes.
func grayFrame(buf []byte, n uint64) []byte {
	buf = append(buf[:0], make([]byte, 512*400)...)
	for i := range buf {
		buf[i] = byte(i + int(n)*3)
	}
	binary.LittleEndian.PutUint64(buf, n)
	return buf
}
