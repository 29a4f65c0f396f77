//go:build !race

package replay

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/testutil"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// TestReplayAllocs proves the per-message path allocates nothing: Run over
// 40000 messages allocates exactly as much as over 40 (its fixed cost), as
// fast as possible and in timed mode.
func TestReplayAllocs(t *testing.T) {
	open := func(n int) *pack.Reader {
		r, err := pack.Open(allocDump(t, n))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	small, big := open(40), open(40000)
	for _, rate := range []float64{0, 1e12} {
		allocs := func(r *pack.Reader) float64 {
			return runAllocs(t, func() (*Player, error) { return New([]*pack.Reader{r}, Options{Rate: rate}) })
		}
		if a, b := allocs(small), allocs(big); a != b {
			t.Errorf("rate %v: Run allocates %v times for 40 messages, %v for 40000: the per-message path allocates", rate, a, b)
		}
	}
	// with a clock topic ticking at every message time (ns times: 1 GHz
	// is over the limit, so every 1000 ns of the 40000 ns: 40 ticks)
	clocked := func(r *pack.Reader) float64 {
		return runAllocs(t, func() (*Player, error) { return New([]*pack.Reader{r}, Options{ClockHz: 1e6}) })
	}
	if a, b := clocked(small), clocked(big); a != b {
		t.Errorf("clock topic: Run allocates %v times for 40 messages, %v for 40000 (and 40 ticks)", a, b)
	}
}

// allocDump writes n messages of 8 to 200 bytes over four topics.
func allocDump(t *testing.T, n int) string {
	var msgs []rec
	for i := 0; i < n; i++ {
		msgs = append(msgs, rec{name: "t" + string(rune('a'+i%4)), gen: int64(i), done: int64(i + 1), data: payload("x", i, 200)})
	}
	return writeDump(t, "d.pack", msgs, nil)
}

// runAllocs returns the allocations of Run alone: making a Player and
// running it to Discard, minus making it. Each is the least of several
// rounds: a whole Run is long enough for a GC cycle to land in a round.
func runAllocs(t *testing.T, mk func() (*Player, error)) float64 {
	t.Helper()
	newOnly := testutil.MinAllocs(5, func() {
		if _, err := mk(); err != nil {
			t.Fatal(err)
		}
	})
	both := testutil.MinAllocs(5, func() {
		p, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(context.Background(), Discard{}); err != nil {
			t.Fatal(err)
		}
	})
	return both - newOnly
}

func TestHistAllocs(t *testing.T) {
	var h hist
	if a := testing.AllocsPerRun(100, func() { h.add(12345) }); a != 0 {
		t.Errorf("hist.add: %v allocs", a)
	}
}

// TestReplayMCAPAllocs: replaying an MCAP dump allocates nothing per
// message nor per chunk: Run over 40000 messages (about 300 chunks)
// allocates as much as over 4000 (about 30), uncompressed and lz4.
func TestReplayMCAPAllocs(t *testing.T) {
	for _, comp := range []string{mcap.CompressionNone, mcap.CompressionLZ4} {
		open := func(n int) *dumpfile.Source {
			r, err := pack.Open(allocDump(t, n))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			out := filepath.Join(t.TempDir(), "d.mcap")
			f, err := os.Create(out)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mcap.ExportPack(r, f, mcap.ExportOptions{Options: mcap.Options{Compression: comp, ChunkSize: 16 << 10}}); err != nil {
				t.Fatal(err)
			}
			f.Close()
			s, err := dumpfile.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		small, big := open(4000), open(40000)
		allocs := func(s *dumpfile.Source) float64 {
			return runAllocs(t, func() (*Player, error) { return newPlayer([]*dumpfile.Source{s}, Options{}) })
		}
		if a, b := allocs(small), allocs(big); a != b {
			t.Errorf("%q: Run allocates %v times for 4000 messages, %v for 40000: the per-message or per-chunk path allocates", comp, a, b)
		}
	}
}

// TestCollectorIngestAllocs: the closed loop's private recorder is fed on
// the sources' ingest path; its sink (the recorder's IngestAt plus a
// wake-up of the drainer) allocates nothing, whether the drainer is
// asleep or the wake-up is already pending.
func TestCollectorIngestAllocs(t *testing.T) {
	c, err := newCollector(collectorOptions{listen: []Listen{{Shm: t.TempDir()}}, expect: []string{"planner/brake"},
		caps: []func() topicCap{func() topicCap { return topicCap{n: 1 << 20, bytes: 1 << 30} }}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.finish()
	sink := collectSink{c}
	id, err := sink.Discover(ingest.TopicInfo{Name: "planner/brake"})
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 13)
	testutil.AssertNoAllocs(t, func() {
		if !sink.IngestAt(id, sink.Now(), 1, msg) {
			t.Fatal("refused")
		}
	})
}
