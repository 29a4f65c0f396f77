//go:build !race

package bench

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/testutil"
)

// A topic's type (message encoding and schema) is declared once, at
// Discover; IngestAt never looks at it. These benchmarks show it: ingest of
// a topic typed as a packed struct, or with a 1 MiB protobuf schema, costs
// what an untyped topic's does.

// benchTypes are the types compared: none declared (raw), a packed struct,
// a protobuf type whose descriptor set is 1 MiB.
var benchTypes = []struct {
	name string
	typ  ingest.Type
}{
	{"raw", ingest.Type{}},
	{"packed", ingest.Packed("vehicle.State", "f32le speed (m/s); u8 gear; pad 3; f64le pos[3] (m)")},
	{"protobuf-1MiB", ingest.Type{MessageEncoding: ingest.EncodingProtobuf,
		Schema: ingest.Schema{Name: "big.Message", Encoding: ingest.SchemaProtobuf, Data: make([]byte, 1<<20)}}},
}

// newTypedRecorder makes a recorder with one topic of type typ.
func newTypedRecorder(tb testing.TB, typ ingest.Type, ringBytes int) (*engine.Recorder, ingest.TopicID) {
	tb.Helper()
	r, err := engine.New(engine.Config{CacheSize: int64(ringBytes), TopicBytes: int64(ringBytes), Pre: new(time.Minute)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	id, err := r.Discover(ingest.TopicInfo{Name: "bench/typed", Type: typ, Source: "api"})
	if err != nil {
		tb.Fatal(err)
	}
	if st := r.Topics()[0]; st.TypeErr != nil || !st.Info.Type.Equal(typ.OrRaw()) {
		tb.Fatalf("topic recorded as %v (%v), want %v", st.Info.Type, st.TypeErr, typ)
	}
	return r, id
}

// BenchmarkIngestTyped: Recorder.Ingest of a typed topic, per type and
// size; compare type=raw with the others in the same run.
func BenchmarkIngestTyped(b *testing.B) {
	for _, n := range []int{64, 1024} {
		for _, bt := range benchTypes {
			b.Run(fmt.Sprintf("size=%d/type=%s", n, bt.name), func(b *testing.B) {
				r, id := newTypedRecorder(b, bt.typ, ringBytesFor(n))
				benchIngest(b, r, id, n)
			})
		}
	}
}

// TestTypedIngestSameCost: in interleaved rounds (untyped, then each
// typed topic, in the same run), the median ratio of a typed topic's
// ingest time to the untyped one's stays within ratioMargin of 1, with 0
// allocations. A gate on a same-run ratio, run with the bench gates.
func TestTypedIngestSameCost(t *testing.T) {
	if testing.Short() {
		t.Skip("a same-run benchmark comparison; skipped in -short mode")
	}
	if bt := flag.Lookup("test.benchtime"); bt != nil {
		old := bt.Value.String()
		bt.Value.Set("100ms")
		defer bt.Value.Set(old)
	}
	const rounds = 9
	for _, n := range []int{64, 1024} {
		recs := make([]*engine.Recorder, len(benchTypes))
		ids := make([]ingest.TopicID, len(benchTypes))
		for i, bt := range benchTypes {
			recs[i], ids[i] = newTypedRecorder(t, bt.typ, ringBytesFor(n))
		}
		ratios := make([][]float64, len(benchTypes))
		var base []float64
		for range rounds {
			for i := range benchTypes {
				res := testing.Benchmark(func(b *testing.B) { benchIngest(b, recs[i], ids[i], n) })
				if res.AllocsPerOp() != 0 {
					t.Errorf("size=%d type=%s: %d allocs/op", n, benchTypes[i].name, res.AllocsPerOp())
				}
				ns := float64(res.T.Nanoseconds()) / float64(res.N)
				if i == 0 {
					base = append(base, ns)
					continue
				}
				ratios[i] = append(ratios[i], ns/base[len(base)-1])
			}
		}
		for i := 1; i < len(benchTypes); i++ {
			m := median(ratios[i])
			t.Logf("size=%d: type=%s / untyped ratio %.3f (median of %d interleaved rounds; untyped median %.1f ns/op)",
				n, benchTypes[i].name, m, rounds, median(base))
			if m > 1/ratioMargin || m < ratioMargin {
				t.Errorf("size=%d: a %s topic's ingest costs %.2f times an untyped one's, want about 1", n, benchTypes[i].name, m)
			}
		}
	}
}

// TestTypedIngestAllocs: ingest of a typed topic allocates nothing, like
// an untyped one's (TestIngestAllocs).
func TestTypedIngestAllocs(t *testing.T) {
	for _, bt := range benchTypes {
		r, id := newTypedRecorder(t, bt.typ, 4<<20)
		p := makePayload(256)
		t.Run(bt.name, func(t *testing.T) { testutil.AssertNoAllocs(t, func() { r.Ingest(id, 1, p) }) })
	}
}
