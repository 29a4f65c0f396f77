package bench

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/internal/checkpayload"
)

// TestIngestStress drives the public API: one writer ingests 10^6
// checksummed messages into a small ring while readers of different speeds
// follow it. Every payload a reader returns verifies, arrives in order, and
// for every reader delivered + Lost() == written.
func TestIngestStress(t *testing.T) {
	const total = 1_000_000
	r, ids := newIngestRecorder(t, 1, 64<<10)
	id := ids[0]
	const readers = 3
	var ready, wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, readers)
	got := make([][2]uint64, readers)
	for k := range readers {
		rd, err := r.NewReader(id)
		if err != nil {
			t.Fatal(err)
		}
		ready.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer rd.Close()
			ready.Done()
			var m engine.Message
			var delivered uint64
			next := uint64(0)
			for finished := false; ; {
				select {
				case <-done:
					finished = true
				default:
				}
				for rd.ReadInto(&m) {
					seq, err := checkpayload.Verify(m.Data)
					if err != nil || seq != m.Seq || seq < next {
						errs <- fmt.Errorf("reader %d: seq %d (want >= %d): %v", k, m.Seq, next, err)
						return
					}
					next = seq + 1
					delivered++
					if k > 0 && delivered%uint64(4*k) == 0 {
						runtime.Gosched() // slower readers fall behind
					}
				}
				if finished {
					got[k] = [2]uint64{delivered, rd.Lost()}
					return
				}
			}
		}()
	}
	ready.Wait()
	buf := make([]byte, checkpayload.MaxLen)
	for seq := range uint64(total) {
		if !r.Ingest(id, int64(seq), checkpayload.Fill(buf, seq)) {
			t.Fatalf("Ingest %d rejected", seq)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for k, g := range got {
		t.Logf("reader %d: delivered %d, lost %d", k, g[0], g[1])
		if g[0]+g[1] != total {
			t.Errorf("reader %d: delivered %d + lost %d != written %d", k, g[0], g[1], total)
		}
	}
	if w := r.Topics()[id].Counters.Written; w != total {
		t.Errorf("Written = %d, want %d", w, total)
	}
}
