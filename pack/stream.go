package pack

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/edr-lite/edr-lite/ingest"

	"github.com/edr-lite/edr-lite/dumpinfo"
)

// streamGrowMin is the least a StreamReader's record buffer grows by.
const streamGrowMin = 64 << 10

// StreamReader reads a pack file from an io.Reader (a pipe, a socket,
// standard input) front to back, frame by frame: the file header, then
// each record in turn, every CRC checked as for Reader. It needs no index
// and never seeks. Metadata sections are kept as they pass (DumpInfo,
// Metadata); the index section is checked and skipped; a trailer must sit
// right after the index, describe the bytes read and be the end of the
// stream. A stream that stops at a record boundary ends with io.EOF (a
// file still being written or cut short reads up to its last whole frame).
//
// Memory is bounded by the records actually read: the record buffer grows
// with the bytes that arrive (at most doubling, from 64 KiB), never to a
// length a header declares before those bytes are there; it is as large as
// the largest record read so far. A record larger than the memory limit
// (ReaderOptions.MaxMemory, DefaultMaxMemory by default), or metadata
// sections adding up to more, are refused as damaged. Decoding a frame is
// bounded as for Reader.
//
// A StreamReader is not safe for concurrent use. Bytes it puts into a
// Frame alias its record buffer or the Frame's decompression buffer and
// are valid until the next read.
type StreamReader struct {
	frameDecoder
	r     io.Reader
	hdr   FileHeader
	off   int64 // offset of the next record
	last  int64 // offset of the frame the last read returned; -1 before
	buf   []byte
	md    []namedBlob
	mdIdx map[string]int // md by name
	mdLen int64          // bytes of metadata kept
	index int64          // offset of the index section; -1 before it
	err   error          // sticky: a damaged record, an I/O error, io.EOF, ErrClosed

	types  []TopicType
	bodies map[ingest.ContentID]ingest.Type

	attachments []Attachment // without their bytes
	skipDamaged bool         // ReaderOptions.SkipDamaged
	skipped     Skipped      // the frames it skipped

	indexed bool // the index and trailer checked out
	frames  [CompressZstd + 1]int
	stored  int64
	raw     int64
}

// NewStreamReader reads and checks the file header from r. Errors naming
// the stream say "<stream>" for the path.
func NewStreamReader(r io.Reader) (*StreamReader, error) {
	return NewStreamReaderWith(r, ReaderOptions{})
}

// NewStreamReaderWith is NewStreamReader with options (MaxMemory; a Cache
// is not used).
func NewStreamReaderWith(r io.Reader, opts ReaderOptions) (*StreamReader, error) {
	s := &StreamReader{frameDecoder: frameDecoder{codec: newCodecs(), maxMem: opts.MaxMemory}, r: r, index: -1, last: -1,
		buf: make([]byte, HeaderSize, streamGrowMin), skipDamaged: opts.SkipDamaged}
	n, err := io.ReadFull(r, s.buf[:HeaderSize])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("pack: reading <stream>: %w", err)
	}
	if s.hdr, err = parseFileHeader("", s.buf[:n]); err != nil {
		return nil, err
	}
	s.off = HeaderSize
	return s, nil
}

// Header returns the file header.
func (s *StreamReader) Header() FileHeader { return s.hdr }

// Tell returns the offset of the next record: the bytes consumed so far.
func (s *StreamReader) Tell() int64 { return s.off }

// FrameOffset returns the offset of the frame the last successful read
// returned, -1 before the first.
func (s *StreamReader) FrameOffset() int64 { return s.last }

// ReadInto reads the next frame with its data into f, reusing f's
// buffers: steady state does not allocate. It returns io.EOF at the end
// and a *CorruptError when a record is damaged (f is then empty); both,
// and an error of the underlying reader, are returned by every later call.
func (s *StreamReader) ReadInto(f *Frame) error { return s.next(f, true) }

// ReadMetaInto reads the next frame's meta into f, as Reader.ReadMetaInto:
// the data is read from the stream (it has to be) but neither checked nor
// decompressed.
func (s *StreamReader) ReadMetaInto(f *Frame) error { return s.next(f, false) }

func (s *StreamReader) fail(f *Frame, err error) error {
	f.Reset(0, 0)
	s.err = err
	return err
}

func (s *StreamReader) next(f *Frame, withData bool) error {
	if s.err != nil {
		f.Reset(0, 0)
		return s.err
	}
	for {
		n, err := io.ReadFull(s.r, s.buf[:4])
		if n == 0 && err == io.EOF {
			return s.fail(f, io.EOF)
		}
		if err != nil {
			return s.fail(f, s.readErr(err, "record magic"))
		}
		switch le.Uint32(s.buf) {
		case frameMagic:
			if s.index >= 0 {
				return s.fail(f, corrupt("", s.off, ErrCorrupt, "frame after the index section"))
			}
			if err := s.fill(4, FrameHeaderSize, "frame header"); err != nil {
				return s.fail(f, err)
			}
			var h frameHeader
			if reason, err := parseFrameHeaderAvail(s.buf[:FrameHeaderSize], math.MaxInt64, &h); err != nil {
				return s.fail(f, corrupt("", s.off, err, "%s", reason))
			}
			if h.recLen > s.limit() {
				return s.fail(f, corrupt("", s.off, ErrMemoryLimit, "frame record of %d bytes, over the reader's limit of %d MiB (offline tools: --max-memory)", h.recLen, s.limit()>>20))
			}
			if err := s.fill(FrameHeaderSize, int(h.recLen), "frame"); err != nil {
				return s.fail(f, err)
			}
			n, err := s.decodeFrame(s.buf[:h.recLen], s.off, f, withData)
			if err != nil {
				if s.skipDamaged && headCRCOf(s.buf[:h.recLen], &h) == h.headCRC {
					// Its head checks out: its length can be trusted, and
					// the stream goes on after it.
					var ce *CorruptError
					errors.As(err, &ce)
					s.skipped.add(LostRange{Offset: s.off, Length: h.recLen, Frames: 1, FromNs: h.timeNs, ToNs: h.endNs, Reason: ce.Reason})
					s.off += h.recLen
					continue
				}
				return s.fail(f, err)
			}
			s.last = s.off
			s.off += n
			s.frames[h.codec]++ // parseFrameHeaderAvail rejects unknown codecs
			s.stored += int64(h.stored)
			s.raw += int64(h.rawLen)
			return nil
		case sectionMagic:
			if err := s.section(); err != nil {
				return s.fail(f, err)
			}
		case trailerMagic:
			return s.fail(f, s.trailer())
		default:
			return s.fail(f, corrupt("", s.off, ErrCorrupt, "bad record magic %#08x", le.Uint32(s.buf)))
		}
	}
}

// section reads the section record whose magic is in s.buf[:4].
func (s *StreamReader) section() error {
	if err := s.fill(4, SectionHeaderSize, "section header"); err != nil {
		return err
	}
	n := int64(le.Uint32(s.buf[12:]))
	if n > MaxSectionSize {
		return corrupt("", s.off, ErrCorrupt, "section length exceeds MaxSectionSize")
	}
	if s.mdLen+n > s.limit() {
		return corrupt("", s.off, ErrMemoryLimit, "section of %d bytes after %d bytes of metadata, over the reader's limit of %d MiB (offline tools: --max-memory)", n, s.mdLen, s.limit()>>20)
	}
	if err := s.fill(SectionHeaderSize, SectionHeaderSize+int(n), "section"); err != nil {
		return err
	}
	kind, payload, rec, reason, err := parseSection(s.buf[:SectionHeaderSize+n])
	if err != nil {
		return corrupt("", s.off, err, "%s", reason)
	}
	if s.index >= 0 {
		return corrupt("", s.off, ErrCorrupt, "section after the index section")
	}
	switch kind {
	case SectionIndex:
		s.index = s.off
	case SectionMetadata:
		if name, data, ok := parseMetadataPayload(payload); ok {
			s.setMetadata(name, data)
		}
	case SectionType:
		if s.bodies == nil {
			s.bodies = map[ingest.ContentID]ingest.Type{}
		}
		// The payload is copied: the record buffer is reused.
		t, err := parseTypePayload("", s.off, append([]byte(nil), payload...), s.bodies)
		if err != nil {
			return err
		}
		s.types = append(s.types, t)
	case SectionAttachment:
		a, err := parseAttachmentPayload("", s.off, payload)
		if err != nil {
			return err
		}
		a.Data = nil // the record buffer is reused
		s.mdLen += int64(len(a.Name)+len(a.MediaType)) + 64
		s.attachments = append(s.attachments, a)
	}
	s.off += rec
	return nil
}

func (s *StreamReader) setMetadata(name string, data []byte) {
	d := append([]byte(nil), data...)
	s.mdLen += int64(len(name) + len(data))
	if s.mdIdx == nil {
		s.mdIdx = map[string]int{}
	}
	if i, ok := s.mdIdx[name]; ok {
		s.md[i].data = d
		return
	}
	s.mdIdx[name] = len(s.md)
	s.md = append(s.md, namedBlob{name: name, data: d})
}

// trailer checks the trailer whose magic is in s.buf[:4] and that the
// stream ends after it; it returns io.EOF when all is well.
func (s *StreamReader) trailer() error {
	if err := s.fill(4, TrailerSize, "trailer"); err != nil {
		return err
	}
	b := s.buf[:TrailerSize]
	if got, want := le.Uint32(b[4:]), crc(b[8:32]); got != want {
		return corrupt("", s.off+4, ErrChecksum, "trailer CRC32C %#08x, computed %#08x", got, want)
	}
	switch {
	case [8]byte(b[24:32]) != TrailerEndMagic:
		return corrupt("", s.off+24, ErrCorrupt, "bad trailer end magic")
	case s.index < 0 || int64(le.Uint64(b[8:])) != s.index:
		return corrupt("", s.off+8, ErrCorrupt, "trailer index offset %d, index section at %d", int64(le.Uint64(b[8:])), s.index)
	case int64(le.Uint64(b[16:])) != s.off+TrailerSize:
		return corrupt("", s.off+16, ErrCorrupt, "trailer file size %d, stream ends at %d", int64(le.Uint64(b[16:])), s.off+TrailerSize)
	}
	s.off += TrailerSize
	if n, _ := io.ReadFull(s.r, s.buf[:1]); n != 0 {
		return corrupt("", s.off, ErrCorrupt, "bytes after the trailer")
	}
	s.indexed = true
	return io.EOF
}

// Skipped returns the frames a StreamReader reading with SkipDamaged
// skipped so far (frames whose head checks out but whose data does not;
// other damage stops a stream).
func (s *StreamReader) Skipped() Skipped {
	sk := s.skipped
	sk.Lost = append([]LostRange(nil), sk.Lost...)
	return sk
}

// Indexed reports whether the stream ended with a valid index and trailer
// (the file was closed by its writer); false before the end.
func (s *StreamReader) Indexed() bool { return s.indexed }

// Codecs counts the frames read so far by codec, with their stored and
// uncompressed data bytes (Reader.Codecs for a stream).
func (s *StreamReader) Codecs() CodecStats {
	st := CodecStats{Frames: map[Compression]int{}, StoredBytes: s.stored, RawBytes: s.raw}
	for c, n := range s.frames {
		if n > 0 {
			st.Frames[Compression(c)] = n
		}
	}
	return st
}

// fill makes s.buf[:n] hold the record's first n bytes, of which the first
// have are there, reading the rest from the stream. The buffer grows with
// the bytes read, by at most doubling, never straight to n.
func (s *StreamReader) fill(have, n int, what string) error {
	for have < n {
		if have == cap(s.buf) {
			nb := make([]byte, min(n, max(2*have, streamGrowMin)))
			copy(nb, s.buf[:have])
			s.buf = nb
		}
		s.buf = s.buf[:cap(s.buf)]
		k, err := io.ReadFull(s.r, s.buf[have:min(n, cap(s.buf))])
		have += k
		if err != nil {
			return s.readErr(err, what)
		}
	}
	return nil
}

// readErr turns the end of the stream inside a record into a *CorruptError
// (ErrTruncated) and wraps other errors of the underlying reader.
func (s *StreamReader) readErr(err error, what string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return corrupt("", s.off, ErrTruncated, "%s truncated: the stream ends inside it", what)
	}
	return fmt.Errorf("pack: reading <stream> at offset %d: %w", s.off, err)
}

// Metadata returns the metadata blob stored under name, if a section of
// that name has been read so far (Close writes them after the last frame:
// read to io.EOF first). The bytes are the StreamReader's own copy.
func (s *StreamReader) Metadata(name string) ([]byte, bool) {
	if i, ok := s.mdIdx[name]; ok {
		return s.md[i].data, true
	}
	return nil, false
}

// MetadataNames returns the names of the metadata sections read so far.
func (s *StreamReader) MetadataNames() []string {
	out := make([]string, len(s.md))
	for i, m := range s.md {
		out[i] = m.name
	}
	return out
}

// DumpInfo returns the dump information, once its section has been read
// (see Metadata); ok is false when there is none or it does not decode.
func (s *StreamReader) DumpInfo() (d dumpinfo.Info, ok bool) {
	b, ok := s.Metadata(dumpinfo.MetadataName)
	if !ok {
		return dumpinfo.Info{}, false
	}
	d, err := dumpinfo.Decode(b)
	if err != nil {
		return dumpinfo.Info{}, false
	}
	return d, true
}

// Close releases the decompressors; later reads return ErrClosed. It does
// not close the underlying reader.
func (s *StreamReader) Close() error {
	if s.err != ErrClosed {
		s.codec.close()
		s.err = ErrClosed
	}
	return nil
}

// DecodeFrame decodes the frame record at the start of b (a record as it
// sits in a file, from its magic; b may run past it) into f, with its data,
// both CRCs checked, and returns the record's length. f's bytes alias b or
// f's decompression buffer. Damage is a *CorruptError whose offset counts
// from the start of b.
func DecodeFrame(b []byte, f *Frame) (int, error) {
	return DecodeFrameWith(b, f, ReaderOptions{})
}

// DecodeFrameWith is DecodeFrame within opts.MaxMemory (the other options
// do not apply).
func DecodeFrameWith(b []byte, f *Frame, opts ReaderOptions) (int, error) {
	d := frameDecoder{codec: newCodecs(), maxMem: opts.MaxMemory}
	defer d.codec.close()
	n, err := d.decodeFrame(b, 0, f, true)
	return int(n), err
}
