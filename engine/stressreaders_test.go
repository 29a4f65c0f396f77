package engine

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
)

// stressResult is what one stress reader saw.
type stressResult struct{ delivered, lost uint64 }

// startStressReaders starts n cursors on r that follow the writer from the
// oldest entry, check every payload with verify (which returns the sequence
// number the payload carries) and its sequence order; reader k > 0 pauses
// every slow*k messages so that it falls behind. It returns once every
// reader is positioned; stop ends them and fails t on any error.
func startStressReaders(t *testing.T, r *ring, n, slow int, verify func([]byte) (uint64, error)) (stop func() []stressResult) {
	t.Helper()
	done := make(chan struct{})
	var wg, ready sync.WaitGroup
	errs := make(chan error, n)
	results := make([]stressResult, n)
	for k := range n {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			c := &cursor{r: r}
			c.seekOldest() // before the writer starts: the range is everything
			ready.Done()
			var m Message
			var delivered uint64
			lastSeq := int64(-1)
			finish := false
			for {
				select {
				case <-done:
					finish = true
				default:
				}
				// Yield between polls: spinning readers on two Ps
				// otherwise rely on async preemption to let the
				// writer run, which qemu-user does not deliver
				// reliably (a run of 300 hung at the 14th, the
				// test's own timeout with it).
				runtime.Gosched()
				for c.readInto(&m, math.MaxInt64) {
					seq, err := verify(m.Data)
					if err != nil {
						errs <- fmt.Errorf("reader %d, seq %d: %v", k, m.Seq, err)
						return
					}
					if seq != m.Seq || int64(m.Seq) <= lastSeq {
						errs <- fmt.Errorf("reader %d: seq %d after %d, payload says %d", k, m.Seq, lastSeq, seq)
						return
					}
					lastSeq = int64(m.Seq)
					delivered++
					if k > 0 && delivered%uint64(slow*k) == 0 {
						for range 2000 * k { // slow readers fall behind
							_ = m.Data[0]
						}
					}
				}
				if finish {
					results[k] = stressResult{delivered, c.lost}
					return
				}
			}
		}()
	}
	ready.Wait()
	return func() []stressResult {
		t.Helper()
		close(done)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		return results
	}
}
