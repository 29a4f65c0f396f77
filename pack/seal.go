// Sealed pack files (FORMAT.md, "Seal section"): the writer hashes every
// byte it writes but the seal section's as it writes it, through a sink
// wrapper, and Close writes the seal before the index; FindSeal finds a
// file's seal and hashes what it covers.

package pack

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/edr-lite/edr-lite/evidence"
)

// SectionSeal is the kind of the seal section (FORMAT.md): the file's
// signature, written by Close just before the index. Readers that do not
// know it skip it.
const SectionSeal = 5

// sealRecordSize is a seal section's record: header and payload.
const sealRecordSize = SectionHeaderSize + evidence.SealSize

// hashSink is a sink that feeds its Hasher every byte committed to it,
// until off.
type hashSink struct {
	sink
	h    *evidence.Hasher
	last []byte // the bytes last reserved
	off  bool   // the seal and what follows it: not hashed (already)

	// behind (WriterOptions.HashBehind): a frame's hash runs on the
	// Hasher's worker while the next frame is built and written. heads
	// are the copies of the last two frames' heads the worker reads.
	behind bool
	heads  [2][]byte
	hk     int
	// lender (WriteFrameLent) is the provisional frame's: its head and
	// blocks, written, are held in vec (from heldAt) and lent to the
	// worker by keep, or dropped by rewind.
	lender evidence.Lender
	held   bool
	heldAt int64
}

func (s *hashSink) reserve(n int) ([]byte, error) {
	b, err := s.sink.reserve(n)
	s.last = b
	return b, err
}

func (s *hashSink) commit(n int) error {
	if s.off {
		s.last = nil
		return s.sink.commit(n)
	}
	// hashed while the sink writes it (Hasher.Async), done before the
	// record's memory is reused (a small record is copied aside while a
	// frame is hashed: no wait)
	s.h.WriteAsync(s.last[:n])
	s.last = nil
	err := s.sink.commit(n)
	if n >= asyncMinRecord {
		s.h.Wait()
	}
	return err
}

// asyncMinRecord is the record size from which the Hasher hands it to its
// worker (evidence's asyncMin): such a record is waited for before its
// memory (the sink's buffer) is reused.
const asyncMinRecord = 64 << 10

func (s *hashSink) base() *hashSink { return s }

// headCopy copies a frame's head into the one of heads the worker is not
// reading.
func (s *hashSink) headCopy(head []byte) []byte {
	s.hk ^= 1
	s.heads[s.hk] = append(s.heads[s.hk][:0], head...)
	return s.heads[s.hk]
}

// keep lends the held provisional frame to the worker, checked by its
// lender.
func (s *hashSink) keep(vec [][]byte) {
	if !s.held {
		return
	}
	s.h.Lend(s.heldAt, s.lender, vec...)
	s.held, s.lender = false, nil
}

// hashVecSink is a hashSink over a vecSink.
type hashVecSink struct {
	*hashSink
	vs  vecSink
	vec [][]byte
}

func (s *hashVecSink) writeVec(head []byte, blocks [][]byte, n int64) error {
	// Hashed while the writev copies the same bytes (Hasher.Async), and,
	// unless behind, done before it returns: a caller that borrowed the
	// blocks checks them after (WriteFrameProvisional), and the hash must
	// be of what it checked.
	s.vec = append(append(s.vec[:0], s.headCopy(head)), blocks...)
	s.h.WriteAsync(s.vec...)
	clear(s.vec)
	err := s.vs.writeVec(head, blocks, n)
	if !s.behind {
		s.h.Wait()
	}
	return err
}

// hashRewindSink is a hashVecSink over a sink that rewinds (Create's
// write(2) path): it marks the hash before every record, so that taking
// the record back (TakeBackFrame) takes it out of the hash too; a frame
// written with a lender (WriteFrameLent) is hashed only once kept.
type hashRewindSink struct {
	*hashVecSink
	rw rewinder
	fs readBack
}

// readBack is a sink whose written bytes can be read back (Create's
// write(2) path): where a lent frame's bytes lie.
type readBack interface {
	// end is the offset of the next byte accepted.
	end() int64
	readerAt() io.ReaderAt
}

func (s *hashRewindSink) reserve(n int) ([]byte, error) {
	s.h.Mark()
	return s.hashVecSink.reserve(n)
}

func (s *hashRewindSink) writeVec(head []byte, blocks [][]byte, n int64) error {
	if s.lender == nil || s.fs == nil {
		s.h.Mark()
		return s.hashVecSink.writeVec(head, blocks, n)
	}
	at := s.fs.end()
	s.vec = append(append(s.vec[:0], s.headCopy(head)), blocks...)
	if err := s.vs.writeVec(head, blocks, n); err != nil {
		clear(s.vec)
		return err
	}
	s.held, s.heldAt = true, at
	return nil
}

func (s *hashRewindSink) keep() {
	s.hashSink.keep(s.vec)
	clear(s.vec)
}

func (s *hashRewindSink) rewind(to int64) error {
	s.h.Wait() // rare: the caller writes again from memory of its own
	if s.held {
		s.held, s.lender = false, nil
		clear(s.vec)
		return s.rw.rewind(to)
	}
	if got := s.h.MarkedAt(); got != to {
		return fmt.Errorf("BUG: pack: rewinding a sealed file to %d, its hash marked at %d", to, got)
	}
	if err := s.h.Back(); err != nil {
		return err
	}
	return s.rw.rewind(to)
}

// sealing is what every hashing sink has.
type sealing interface {
	sink
	base() *hashSink
}

// keeper is a hashing sink that holds a provisional frame lent
// (hashRewindSink).
type keeper interface{ keep() }

// hashing wraps s so that what is written to it is hashed into h, keeping
// the interfaces s has (vecSink, rewinder).
func hashing(s sink, h *evidence.Hasher, behind bool) sealing {
	hs := &hashSink{sink: s, h: h, behind: behind}
	vs, isVec := s.(vecSink)
	if !isVec {
		return hs
	}
	hv := &hashVecSink{hashSink: hs, vs: vs}
	if rw, ok := s.(rewinder); ok {
		fs, _ := s.(readBack)
		if fs != nil {
			h.SetSource(fs.readerAt()) // a lent frame that changed is read back from the file
		}
		return &hashRewindSink{hashVecSink: hv, rw: rw, fs: fs}
	}
	return hv
}

// writeSealedTail writes the seal section, the index section (idx) and the
// trailer: the index and trailer are hashed before the seal is made, so
// the seal covers every byte of the file but its own.
func (w *Writer) writeSealedTail(idx []byte) error {
	hs := w.sink.(sealing).base()
	at := w.off
	indexOff := at + sealRecordSize
	rec := make([]byte, SectionHeaderSize+len(idx)+TrailerSize)
	copy(rec[SectionHeaderSize:], idx)
	putSectionHeader(rec, SectionIndex, idx)
	putTrailer(rec[SectionHeaderSize+len(idx):], indexOff, indexOff+int64(len(rec)))
	hs.h.Write(rec)
	seal, err := w.opts.Seal.Finish(at)
	if err != nil {
		return err
	}
	hs.off = true
	if _, err := w.writeSection(SectionSeal, seal.AppendBinary(make([]byte, 0, evidence.SealSize))); err != nil {
		return err
	}
	dst, err := w.sink.reserve(len(rec))
	if err != nil {
		return err
	}
	copy(dst, rec)
	if err := w.sink.commit(len(rec)); err != nil {
		return err
	}
	w.off += int64(len(rec))
	return nil
}

// trailerIndex returns the index offset of the trailer t (the last
// TrailerSize bytes of a file of size bytes) when it is valid.
func trailerIndex(t []byte, size int64) (int64, bool) {
	if len(t) != TrailerSize || le.Uint32(t) != trailerMagic || [8]byte(t[24:32]) != TrailerEndMagic ||
		crc(t[8:32]) != le.Uint32(t[4:]) || int64(le.Uint64(t[16:])) != size {
		return 0, false
	}
	off := int64(le.Uint64(t[8:]))
	if off < HeaderSize || off > size-TrailerSize-SectionHeaderSize {
		return 0, false
	}
	return off, true
}

// sealRecordAt parses b (sealRecordSize bytes at offset at) as a seal
// section: nil and "" when it is no seal section at all, nil and a
// reason when it is one that does not check out. It is taken for a seal
// section when at most one of its marks differs (its magic, kind, length,
// its payload's first four bytes, its offset field), so that one changed
// byte never turns a seal into "no seal".
func sealRecordAt(b []byte, at int64) (*evidence.Seal, string) {
	if len(b) < sealRecordSize {
		return nil, ""
	}
	marks := 0
	for _, ok := range []bool{le.Uint32(b) == sectionMagic, le.Uint32(b[8:]) == SectionSeal,
		le.Uint32(b[12:]) == evidence.SealSize, string(b[SectionHeaderSize:SectionHeaderSize+4]) == "\x01\x01\x01\x01",
		int64(le.Uint64(b[SectionHeaderSize+4+evidence.DigestSize+8:])) == at} {
		if ok {
			marks++
		}
	}
	switch {
	case marks < 4:
		return nil, ""
	case marks == 4:
		return nil, fmt.Sprintf("the seal section at %d is damaged (its header or first fields changed)", at)
	}
	payload := b[SectionHeaderSize:sealRecordSize]
	if crcUpdate(crc(b[8:16]), payload) != le.Uint32(b[4:]) {
		return nil, fmt.Sprintf("the seal section at %d does not check out (CRC32C mismatch): it was changed", at)
	}
	s, err := evidence.ParseSeal(payload)
	if err != nil {
		return nil, fmt.Sprintf("the seal section at %d: %v", at, err)
	}
	if s.Format != evidence.FormatPack {
		return nil, fmt.Sprintf("the seal section at %d is the seal of an %s file", at, s.Format)
	}
	if s.At != at {
		return nil, fmt.Sprintf("the seal section at %d says it lies at %d: moved", at, s.At)
	}
	return &s, ""
}

// FindSeal finds the seal of the pack file r (size bytes) and hashes the
// bytes it covers (every byte but its section's), reading the file once
// when it ends with its trailer; otherwise (cut short, extended, the
// trailer changed) it searches the file for a seal section first.
// Found.Problem says why a seal found cannot be trusted whatever the
// digest (a damaged seal section). Errors are I/O errors.
func FindSeal(r io.ReaderAt, size int64) (evidence.Found, error) {
	f := evidence.Found{Size: size}
	var at int64 = -1
	var seal *evidence.Seal
	if size >= HeaderSize+TrailerSize {
		t := make([]byte, TrailerSize)
		if _, err := r.ReadAt(t, size-TrailerSize); err != nil {
			return f, err
		}
		if idx, ok := trailerIndex(t, size); ok {
			f.Complete = true
			if c := idx - sealRecordSize; c >= HeaderSize {
				b := make([]byte, sealRecordSize)
				if _, err := r.ReadAt(b, c); err != nil {
					return f, err
				}
				seal, f.Problem = sealRecordAt(b, c)
				at = c
			}
			if seal == nil && f.Problem == "" {
				return f, nil // closed without a seal: unsigned
			}
		}
	}
	if seal == nil {
		var err error
		var problem string
		if at, seal, problem, err = scanSeal(r, size); err != nil {
			return f, err
		}
		if f.Problem == "" {
			f.Problem = problem
		}
		if seal != nil {
			f.Problem = "" // the one found checks out; the trailer's is the damage
		}
	}
	if seal == nil {
		return f, nil
	}
	f.Seal = seal
	h := evidence.NewHasher()
	if err := hashRange(h, r, 0, at); err != nil {
		return f, err
	}
	if err := hashRange(h, r, at+sealRecordSize, size); err != nil {
		return f, err
	}
	f.Digest, f.Hashed = h.Sum(), h.Len()
	return f, nil
}

// scanChunk is how much of a file FindSeal reads at a time.
const scanChunk = 1 << 20

// scanSeal searches r for seal sections and returns the last that checks
// out, or why the last that looked like one did not.
func scanSeal(r io.ReaderAt, size int64) (at int64, seal *evidence.Seal, problem string, err error) {
	magic := le.AppendUint32(nil, sectionMagic)
	buf := make([]byte, min(scanChunk+sealRecordSize, size))
	at = -1
	for off := int64(0); off < size; off += scanChunk {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return -1, nil, "", err
		}
		b := buf[:n]
		for i := 0; i < min(n, scanChunk); {
			j := bytes.Index(b[i:], magic)
			if j < 0 || i+j >= scanChunk {
				break
			}
			i += j
			if s, why := sealRecordAt(b[i:], off+int64(i)); s != nil {
				at, seal, problem = off+int64(i), s, ""
			} else if why != "" {
				problem = why
			}
			i++
		}
	}
	if seal == nil {
		at = -1
	}
	return at, seal, problem, nil
}

// hashRange hashes bytes [from, to) of r.
func hashRange(h *evidence.Hasher, r io.ReaderAt, from, to int64) error {
	buf := make([]byte, min(scanChunk, max(to-from, 0)))
	for from < to {
		n := min(int64(len(buf)), to-from)
		if _, err := r.ReadAt(buf[:n], from); err != nil {
			return err
		}
		h.Write(buf[:n])
		from += n
	}
	return nil
}

// finalMetadata adds WriterOptions.FinalMetadata, by name, replacing
// blobs of the same names.
func (w *Writer) finalMetadata() {
	names := make([]string, 0, len(w.opts.FinalMetadata))
	for n := range w.opts.FinalMetadata {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := append([]byte(nil), w.opts.FinalMetadata[n]...)
		if i, ok := w.mdIdx[n]; ok {
			w.metadata[i].data = d
			continue
		}
		if w.mdIdx == nil {
			w.mdIdx = map[string]int{}
		}
		w.mdIdx[n] = len(w.metadata)
		w.metadata = append(w.metadata, namedBlob{name: n, data: d})
	}
}

// RecoverStamped is RecoverWith writing out with seal and final
// metadata (a stamp: the file a verb made, signed by an operator's key).
func RecoverStamped(in, out string, ropts ReaderOptions, seal *evidence.Sealer, final map[string][]byte) (*RecoverReport, error) {
	b, release, err := MapFile(in)
	if err != nil {
		return nil, err
	}
	defer release()
	return recoverBytes(in, b, ropts, func(opts WriterOptions) (*Writer, error) {
		opts.Seal, opts.FinalMetadata = seal, final
		return Create(out, opts)
	})
}
