package evidence

import (
	"crypto/sha256"
	"encoding"
	"fmt"
	"hash"
	"io"
	"runtime"
)

// Hasher is the streaming SHA-256 of a file as it is written. A writer
// that writes a record provisionally (a frame or chunk it may take back)
// marks the hash before it (Mark) and goes back to the mark when it takes
// the record back (Back), so the digest follows what stays in the file.
//
// With Async, large pieces are hashed on a worker goroutine of the
// Hasher's own (Lend, WriteAsync), one job in flight at a time (Lend
// queues the next behind it, then waits for it), so that a writer hashes
// frame k there while it builds and writes frame k+1;
// small writes meanwhile are copied aside and hashed after the job (in
// order), and a Mark is taken on the worker between the bytes before and
// after it. What the worker hashes is always the file's bytes in file
// order: Sum, Back and Wait wait for it first.
//
// It allocates nothing after New and the first jobs (its buffers are
// kept: at most two jobs' sides of sideMax bytes).
type Hasher struct {
	h      hash.Hash // the worker's while a job is in flight
	n      int64     // bytes given so far (hashed or to be)
	mark   []byte    // the state at the last Mark (written by whoever takes it)
	markN  int64
	marked bool

	// Async: the worker goroutine and its job in flight. acc is the next
	// job, collecting copies of small writes and the position of a Mark
	// until it is handed over (Lend) or hashed here (Wait).
	start   func()
	jobs    chan *hashJob
	done    chan struct{}
	pending bool
	slots   [2]hashJob
	acc     *hashJob
	src     io.ReaderAt // where a lent job's bytes are read back from (SetSource)
	reread  []byte      // the worker's buffer to read them back (rare)
	err     error       // sticky: a lent job's bytes could not be read back
}

// hashJob is what the worker hashes in one go: side (the copies of small
// writes; a Mark taken after side[:markAt] when markAt >= 0), then pieces
// (lent: the caller's memory, at offset at of the file), checked by lent.
type hashJob struct {
	side   []byte
	markAt int
	pieces [][]byte
	n      int64
	at     int64
	lent   Lender
	save   []byte // the state before pieces, when lent
	err    error
}

// Lender answers, after the worker hashed the memory it lent, whether
// that memory still held the bytes written to the file then (a ring's
// payloads a producer may overwrite after the writer checked them).
// Intact is called on the worker goroutine.
type Lender interface {
	Intact() bool
}

// sideMax bounds the small writes copied aside while a job is in flight;
// past it a write waits for the job.
const sideMax = 256 << 10

// NewHasher returns an empty Hasher.
func NewHasher() *Hasher {
	h := &Hasher{h: sha256.New(), mark: make([]byte, 0, 256)}
	h.slots[0].markAt, h.slots[1].markAt = -1, -1
	h.acc = &h.slots[0]
	return h
}

// Write adds p to the hash; p may be reused when Write returns. While a
// job is in flight a small p is copied aside and hashed after it.
func (h *Hasher) Write(p []byte) {
	if h.busy() && len(h.acc.side)+len(p) <= sideMax {
		h.acc.side = append(h.acc.side, p...)
		h.n += int64(len(p))
		return
	}
	h.Wait()
	h.h.Write(p)
	h.n += int64(len(p))
}

// busy reports whether a job is in flight (without waiting for it).
func (h *Hasher) busy() bool {
	if !h.pending {
		return false
	}
	select {
	case <-h.done:
		h.finished()
		return false
	default:
		return true
	}
}

// asyncMin is the least WriteAsync hands its worker: below, the handing
// over costs more than the overlap saves.
const asyncMin = 64 << 10

// Async makes Lend and WriteAsync hash on a goroutine of the Hasher's
// own, which runs start first on its locked OS thread (the dump writer's:
// a lower CPU and I/O priority). Stop ends it.
func (h *Hasher) Async(start func()) { h.start = start }

// SetSource gives the Hasher the file being hashed, to read a lent job's
// bytes back from when its Lender says its memory changed.
func (h *Hasher) SetSource(r io.ReaderAt) { h.src = r }

// WriteAsync adds the pieces to the hash in order: on the worker
// goroutine when Async was called and they hold asyncMin bytes or more
// (Lend without a Lender: the pieces' memory must then stay unchanged
// until the next Lend, WriteAsync, Wait, Back, Sum or Stop returns), else
// at once.
func (h *Hasher) WriteAsync(pieces ...[]byte) {
	total := 0
	for _, p := range pieces {
		total += len(p)
	}
	if h.start == nil || total < asyncMin {
		for _, p := range pieces {
			h.Write(p)
		}
		return
	}
	h.Lend(-1, nil, pieces...)
}

// Lend hands the pieces to the worker (after what was given before) and
// returns: their memory must stay unchanged until the next Lend,
// WriteAsync, Wait, Back, Sum or Stop returns, or, with a Lender l, the
// pieces must be bytes already written at offset at of the source
// (SetSource): when l says after the hash that the memory changed, the
// worker hashes them again from the source. Without Async it hashes them
// at once. Lend waits for the job before, after it has queued this one
// behind it: the worker goes on to this job as soon as it is done with
// that one, without waiting for the caller's thread to run again and hand
// it over (a wake-up of a locked thread, 0.1 ms and more, per job).
func (h *Hasher) Lend(at int64, l Lender, pieces ...[]byte) {
	j := h.acc
	j.pieces, j.at, j.lent, j.n = append(j.pieces[:0], pieces...), at, l, 0
	for _, p := range pieces {
		j.n += int64(len(p))
	}
	h.n += j.n
	if h.start == nil {
		h.run(j)
		h.finished1(j)
		return
	}
	if h.jobs == nil {
		// Each holds one: the job queued behind the one in flight, and
		// the worker's word that it is done with a job, which it gives
		// without waiting for the caller.
		h.jobs, h.done = make(chan *hashJob, 1), make(chan struct{}, 1)
		go h.worker(h.start, h.jobs, h.done)
	}
	prev := h.other() // the job in flight, if any
	h.jobs <- j
	if h.pending {
		<-h.done
		h.finished1(prev)
	}
	h.pending = true
	h.acc = prev
}

func (h *Hasher) worker(start func(), jobs chan *hashJob, done chan struct{}) {
	runtime.LockOSThread() // the thread ends with the goroutine (never unlocked)
	start()
	for j := range jobs {
		h.run(j)
		done <- struct{}{}
	}
}

// run hashes job j (on the worker, or on the caller when none is in
// flight).
func (h *Hasher) run(j *hashJob) {
	if j.markAt >= 0 {
		h.h.Write(j.side[:j.markAt])
		h.mark = h.appendState(h.mark[:0])
		h.h.Write(j.side[j.markAt:])
	} else {
		h.h.Write(j.side)
	}
	if j.lent != nil {
		j.save = h.appendState(j.save[:0])
	}
	for _, p := range j.pieces {
		h.h.Write(p)
	}
	if j.lent == nil || j.lent.Intact() {
		return
	}
	// The memory changed after the writer checked it: the file holds what
	// was written then; hash that.
	h.restore(j.save)
	if h.src == nil {
		j.err = fmt.Errorf("BUG: evidence: a lent job changed and the Hasher has no source to read it back from")
		return
	}
	if h.reread == nil {
		h.reread = make([]byte, 256<<10)
	}
	for off, end := j.at, j.at+j.n; off < end; {
		b := h.reread[:min(int64(len(h.reread)), end-off)]
		if _, err := h.src.ReadAt(b, off); err != nil {
			j.err = fmt.Errorf("evidence: reading back bytes %d-%d of the file to hash them: %w", off, end, err)
			return
		}
		h.h.Write(b)
		off += int64(len(b))
	}
}

// finished takes the job in flight back (the worker is done with it).
func (h *Hasher) finished() {
	h.pending = false
	h.finished1(h.other())
}

// other is the slot that is not acc: the job in flight, when one is.
func (h *Hasher) other() *hashJob {
	if h.acc == &h.slots[0] {
		return &h.slots[1]
	}
	return &h.slots[0]
}

func (h *Hasher) finished1(j *hashJob) {
	if j.err != nil && h.err == nil {
		h.err = j.err
	}
	clear(j.pieces) // holds none of the caller's memory past the job
	j.pieces, j.lent, j.err, j.side, j.markAt = j.pieces[:0], nil, nil, j.side[:0], -1
}

// Wait waits until everything given is hashed: the job in flight, then
// the small writes copied aside since (here).
func (h *Hasher) Wait() {
	if h.pending {
		<-h.done
		h.finished()
	}
	if j := h.acc; len(j.side) > 0 || j.markAt >= 0 {
		h.run(j)
		h.finished1(j)
	}
}

// Err is the first error of the worker's: a lent job's bytes that could
// not be read back from the source. The digest is not the file's then.
func (h *Hasher) Err() error {
	h.Wait()
	return h.err
}

// Stop waits for the worker goroutine and ends it (a Hasher without
// Async has none); the Hasher hashes on the caller's goroutine after.
func (h *Hasher) Stop() {
	h.Wait()
	if h.jobs != nil {
		close(h.jobs)
		h.jobs = nil
	}
	h.start = nil
}

// Len is the number of bytes hashed (or given to be).
func (h *Hasher) Len() int64 { return h.n }

// Mark remembers the hash as it is, for Back: at once when no job is in
// flight, else on the worker after the job and the writes before it.
func (h *Hasher) Mark() {
	h.markN, h.marked = h.n, true
	if h.busy() {
		h.acc.markAt = len(h.acc.side)
		return
	}
	h.Wait()
	h.mark = h.appendState(h.mark[:0])
}

func (h *Hasher) appendState(b []byte) []byte {
	b, err := h.h.(encoding.BinaryAppender).AppendBinary(b)
	if err != nil {
		panic("BUG: evidence: the SHA-256 state does not marshal: " + err.Error())
	}
	return b
}

func (h *Hasher) restore(state []byte) {
	if err := h.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		panic("BUG: evidence: restoring the SHA-256 state: " + err.Error())
	}
}

// MarkedAt is the number of bytes hashed at the last Mark (-1: none).
func (h *Hasher) MarkedAt() int64 {
	if !h.marked {
		return -1
	}
	return h.markN
}

// Back puts the hash back to the last Mark: what was written since is no
// longer hashed.
func (h *Hasher) Back() error {
	h.Wait()
	if !h.marked {
		return fmt.Errorf("BUG: evidence: Hasher.Back without a mark")
	}
	h.restore(h.mark)
	h.n = h.markN
	return nil
}

// Sum is the digest of what was hashed.
func (h *Hasher) Sum() Digest {
	h.Wait()
	var d Digest
	h.h.Sum(d[:0])
	return d
}

// Sealer seals one file as it is written: the file's writer feeds its
// Hasher every byte it writes but the seal record, then asks Finish for
// the seal, signed. Not safe for concurrent use; one Sealer per file.
type Sealer struct {
	*Hasher
	signer *Signer
	format Format
	link   Link
	seal   Seal
	done   bool
}

// NewSealer returns a Sealer that signs with s a file of format f whose
// place in its chain is link (the zero Link: no chain).
func NewSealer(s *Signer, f Format, link Link) *Sealer {
	return &Sealer{Hasher: NewHasher(), signer: s, format: f, link: link}
}

// Format is the format of the file being sealed.
func (s *Sealer) Format() Format { return s.format }

// Finish signs the file: at is the offset of its seal record, and every
// other byte of the file has been hashed (Length is what was). It returns
// the seal, which the writer then writes at at.
func (s *Sealer) Finish(at int64) (Seal, error) {
	if s.done {
		return s.seal, fmt.Errorf("BUG: evidence: Sealer.Finish called twice")
	}
	if at > s.n {
		return Seal{}, fmt.Errorf("BUG: evidence: seal at %d, %d bytes hashed", at, s.n)
	}
	if err := s.Err(); err != nil {
		return Seal{}, err
	}
	seal := Seal{Version: SealVersion, Format: s.format, Digest: s.Sum(), Length: s.n, At: at,
		Key: s.signer.ID(), Link: s.link}
	seal.Signature = s.signer.sign(seal.Statement())
	s.seal, s.done = seal, true
	s.Stop()
	return seal, nil
}

// Sealed returns the seal Finish made (ok false before).
func (s *Sealer) Sealed() (seal Seal, ok bool) { return s.seal, s.done }

// PlaceholderSeal is a seal of the final size with a zero signature: what
// a writer encodes to learn the seal record's length before it can sign
// (an MCAP seal's numbers are text).
func (s *Sealer) PlaceholderSeal(at, length int64) Seal {
	return Seal{Version: SealVersion, Format: s.format, Length: length, At: at, Key: s.signer.ID(), Link: s.link}
}
