package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fileModel is the file a writer writes, what a Hasher must digest: the
// bytes kept, in order.
type fileModel struct {
	mu sync.Mutex
	b  []byte
}

func (f *fileModel) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if off+int64(len(p)) > int64(len(f.b)) {
		return 0, errors.New("past the end")
	}
	return copy(p, f.b[off:]), nil
}

func (f *fileModel) write(p []byte) {
	f.mu.Lock()
	f.b = append(f.b, p...)
	f.mu.Unlock()
}

// flagLender is a Lender whose memory changed when torn is set.
type flagLender struct{ torn atomic.Bool }

func (l *flagLender) Intact() bool { return !l.torn.Load() }

// TestHasherPipelined drives a Hasher on its worker as the dump writers do
// (frames lent one behind, small records between them, provisional frames
// marked and taken back, lent memory overwritten after the write) and
// checks its digest against the SHA-256 of the file's bytes, for many
// random sequences; -race checks the hand-over.
func TestHasherPipelined(t *testing.T) {
	for seed := range uint64(60) {
		r := rand.New(rand.NewPCG(seed, 1))
		h := NewHasher()
		h.Async(func() {})
		f := &fileModel{}
		h.SetSource(f)
		// two frame buffers, alternating: a frame's memory is rewritten
		// only after the next frame was lent
		var bufs [2][]byte
		var lenders [2]flagLender
		k := 0
		for range 40 {
			switch op := r.IntN(10); {
			case op < 3: // small record, copied aside while a frame is hashed
				p := make([]byte, r.IntN(3000))
				fill(r, p)
				f.write(p)
				h.Write(p)
				fill(r, p) // the caller reuses it at once
			case op < 5: // a frame lent without a lender (the caller's two buffers)
				b := frame(r, &bufs[k%2])
				f.write(b)
				h.Lend(-1, nil, b[:10], b[10:])
				k++
			case op < 8: // a provisional frame: marked, written, then kept or taken back
				at := int64(len(f.b))
				h.Mark()
				b := frame(r, &bufs[k%2])
				l := &lenders[k%2]
				l.torn.Store(false)
				if r.IntN(3) == 0 {
					// taken back before it is lent: nothing of it hashed
					if err := h.Back(); err != nil {
						t.Fatal(err)
					}
					if h.Len() != at {
						t.Fatalf("seed %d: after Back %d bytes, want %d", seed, h.Len(), at)
					}
					continue
				}
				f.write(b)
				if r.IntN(2) == 0 {
					// a producer overwrites the ring after the writer's
					// check, before the worker hashes it (race-free here:
					// overwritten before it is lent)
					fill(r, b[:len(b)/2])
					l.torn.Store(true)
				}
				h.Lend(at, l, b)
				k++
			case op < 9:
				h.Wait()
			default: // a provisional record in the stream, marked and taken back
				h.Mark()
				p := make([]byte, 100)
				h.Write(p)
				if err := h.Back(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := h.Err(); err != nil {
			t.Fatal(err)
		}
		if got, want := h.Sum(), Digest(sha256.Sum256(f.b)); got != want || h.Len() != int64(len(f.b)) {
			t.Fatalf("seed %d: digest %s of %d bytes, want %s of %d", seed, got, h.Len(), want, len(f.b))
		}
		h.Stop()
	}
}

func fill(r *rand.Rand, p []byte) {
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, r.Uint64())
		p = p[8:]
	}
	for i := range p {
		p[i] = byte(r.Uint32())
	}
}

// frame fills *buf with a frame of random size (up to 100 KiB: over
// asyncMin, or not) and returns it.
func frame(r *rand.Rand, buf *[]byte) []byte {
	n := 11 + r.IntN(100<<10)
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	fill(r, b)
	return b
}

// TestHasherRereadError: a lent job whose memory changed and whose bytes
// cannot be read back fails the seal (Finish), never a wrong digest.
func TestHasherRereadError(t *testing.T) {
	h := NewHasher()
	h.Async(func() {})
	h.SetSource(&fileModel{})
	l := &flagLender{}
	l.torn.Store(true)
	h.Lend(0, l, bytes.Repeat([]byte{1}, 100<<10))
	h.Write([]byte("after"))
	if err := h.Err(); err == nil {
		t.Fatal("no error")
	}
	s, _ := GenerateSigner(nil)
	sl := NewSealer(s, FormatPack, Link{})
	sl.Hasher = h
	if _, err := sl.Finish(h.Len()); err == nil {
		t.Fatal("Finish sealed a file whose hash failed")
	}
}

// gateLender is a Lender whose Intact waits until the gate opens.
type gateLender struct{ gate chan struct{} }

func (l *gateLender) Intact() bool { <-l.gate; return true }

// TestHasherQueuesBehindJob: Lend queues its job behind the one in flight
// before it waits for that one, so the worker goes on to it without
// waiting for the caller's thread to be woken and hand it over (the
// hand-over cost each frame of a signed dump two thread wake-ups of the
// worker's idle time). The digest is still of both jobs in order.
func TestHasherQueuesBehindJob(t *testing.T) {
	h := NewHasher()
	h.Async(func() {})
	defer h.Stop()
	first, second := bytes.Repeat([]byte{1}, 100<<10), bytes.Repeat([]byte{2}, 100<<10)
	l := &gateLender{gate: make(chan struct{})}
	h.Lend(0, l, first) // the worker hashes it, then waits in Intact
	lent := make(chan struct{})
	go func() {
		h.Lend(-1, nil, second)
		close(lent)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(h.jobs) == 0 {
		if time.Now().After(deadline) {
			close(l.gate)
			<-lent
			t.Fatal("Lend did not queue its job while the job before was in flight")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-lent:
		t.Fatal("Lend returned before the job before it was done")
	default:
	}
	close(l.gate)
	<-lent
	if got, want := h.Sum(), Digest(sha256.Sum256(append(first, second...))); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
}
