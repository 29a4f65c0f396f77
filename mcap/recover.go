package mcap

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/edr-lite/edr-lite/evidence"
	"io"
	"math"
	"os"
	"path/filepath"
)

// LostRange is one region of a damaged MCAP file that Recover could not
// salvage.
type LostRange struct {
	Offset int64 // where the damage starts
	Length int64 // bytes skipped
	Chunks int   // chunks lost (or, cut by the end of the file, partly lost) in it
	// Messages lost in it: from the chunk's records when they decompress,
	// else from the MessageIndex records that follow it; -1 when unknown.
	Messages int64
	// FromNs..ToNs: the lost chunks' message_start_time..message_end_time
	// when their headers were readable (0 when unknown).
	FromNs, ToNs uint64
	Reason       string
}

// RecoverReport says what Recover salvaged and what was lost.
type RecoverReport struct {
	Chunks   int    // chunks salvaged whole, their CRC checked
	Messages uint64 // messages written to the output
	Schemas  int
	Channels int
	Metadata int
	// PartialMessages counts the messages salvaged from a chunk cut by the
	// end of the file: its complete records, which no CRC can vouch for
	// (the CRC covers the whole chunk). Included in Messages.
	PartialMessages uint64
	LostChunks      int
	LostMessages    uint64 // sum of the known Lost[i].Messages
	LostBytes       int64  // sum of Lost[i].Length
	Lost            []LostRange
	// Orphans counts messages dropped because their channel's record was
	// lost (and no intact summary has it).
	Orphans uint64
	// Attachments counts the attachments copied (those whose fields and
	// CRC check out; another is a lost region).
	Attachments int
	// Truncated: the file ends before its footer (a power loss, a copy cut
	// short, a writer that never closed it).
	Truncated bool
	// SummaryUsed: the file's summary section was intact, and its schemas
	// and channels stood in for any lost with a damaged chunk.
	SummaryUsed bool
}

// RecoverOptions configure Recover.
type RecoverOptions struct {
	// ReaderOptions bound what is decompressed (MaxChunkSize).
	ReaderOptions
	// Compression of the output's chunks: "none", CompressionLZ4 or
	// CompressionZstd; "keep" or "" uses the compression of the input's
	// first chunk.
	Compression string
	// Seal seals the output (Options.Seal); Metadata are records the
	// output gets last, by name (seal.go: a stamp). The input's seal and
	// its records of those names are not copied: they say nothing true
	// of the new file.
	Seal     *evidence.Sealer
	Metadata map[string]map[string]string
}

// resyncBudget bounds, as a multiple of the file's size, what the search
// for an intact chunk past a damaged region may decompress, so a hostile
// file cannot make it quadratic.
const resyncBudget = 4

// Recover reads the MCAP file b (named name in reports), which may be
// truncated or damaged, and writes a new, valid, indexed MCAP file to w:
// every chunk whose CRC checks out, every message, schema, channel,
// attachment and metadata record outside a damaged region, in file order,
// and a rebuilt summary (statistics, chunk, attachment and metadata
// indexes). Past a damaged record
// it resynchronises on the next chunk that decompresses to records its CRC
// vouches for. A file cut inside a chunk keeps that chunk's complete
// records (RecoverReport.PartialMessages). The report says what was lost,
// where. The error is for bytes that hold no MCAP at all (a bad magic and
// no intact chunk) or a failing w; then w may hold a partial file.
func Recover(name string, b []byte, w io.Writer, opts RecoverOptions) (*RecoverReport, error) {
	if opts.MaxChunkSize == 0 {
		opts.MaxChunkSize = DefaultMaxChunkSize
	}
	opts.MaxChunkSize = min(opts.MaxChunkSize, math.MaxInt)
	switch opts.Compression {
	case "keep", CompressionNone, "none", CompressionLZ4, CompressionZstd:
	default:
		return nil, fmt.Errorf("%w: output compression %q", ErrCompression, opts.Compression)
	}
	s := &salvager{r: &Reader{b: b, name: name, opt: opts.ReaderOptions}, out: w, rep: &RecoverReport{}, stamp: opts,
		comp: opts.Compression, schemas: map[uint16]uint16{}, chans: map[uint16]uint16{},
		known: map[uint16]*Channel{}, knownSchemas: map[uint16]*Schema{},
		budget: uint64(len(b))*resyncBudget + opts.MaxChunkSize}
	s.r.dc.max = opts.MaxChunkSize
	defer s.r.dc.close()
	if err := s.run(); err != nil {
		return nil, err
	}
	return s.rep, nil
}

// salvager is one Recover.
type salvager struct {
	r     *Reader        // over the damaged bytes: chunkRecords, parsers, errors
	stamp RecoverOptions // Seal and Metadata (seal.go)
	out   io.Writer
	w     *Writer // the output, created at the first record to write
	rep   *RecoverReport

	profile, library string
	comp             string
	chunkSize        int                 // the output's: the input's largest chunk
	schemas          map[uint16]uint16   // input schema id -> output id
	chans            map[uint16]uint16   // input channel id -> output id
	known            map[uint16]*Channel // the summary's channels
	knownSchemas     map[uint16]*Schema  // the summary's schemas
	kept             uint64              // bytes of schemas, channels and metadata held
	buf              []byte              // decompressed chunk
	budget           uint64              // bytes the resync and loss counts may still decompress
	counting         *LostRange          // a lost chunk whose following MessageIndex records count its messages
}

func (s *salvager) lose(l LostRange) *LostRange {
	s.rep.Lost = append(s.rep.Lost, l)
	s.rep.LostBytes += l.Length
	s.rep.LostChunks += l.Chunks
	if l.Messages > 0 {
		s.rep.LostMessages += uint64(l.Messages)
	}
	return &s.rep.Lost[len(s.rep.Lost)-1]
}

func (s *salvager) run() error {
	b := s.r.b
	end := int64(len(b))
	pos := int64(magicLen)
	r, err := NewReader(b, s.r.name, s.r.opt)
	switch {
	case err == nil:
		s.profile, s.library = r.Profile, r.Library
		pos = r.dataStart
		if r.hasFooter {
			end = r.footerAt
			// An intact summary's schemas and channels stand in for those
			// lost with a damaged chunk; the data ends where it starts.
			if info, ok, err := r.summaryInfo(); err == nil && ok {
				s.rep.SummaryUsed = true
				end = int64(r.footer.summaryStart)
				for i := range info.Schemas {
					s.knownSchemas[info.Schemas[i].ID] = &info.Schemas[i]
				}
				for i := range info.Channels {
					c := info.Channels[i].Channel
					s.known[c.ID] = &c
				}
			}
		} else {
			s.rep.Truncated = true
		}
	case len(b) >= magicLen && [8]byte(b[:8]) == Magic: // the Header is damaged or cut
		s.rep.Truncated = true
	default:
		at := s.resync(0, end)
		if at < 0 {
			return &CorruptError{File: s.r.name, Offset: 0, Field: "magic",
				Err: fmt.Errorf("%w: not an MCAP file, and no intact chunk in it", ErrBadMagic)}
		}
		s.lose(LostRange{Length: at, Messages: -1, Reason: "bad magic or header"})
		pos = at
		s.rep.Truncated = true
	}
	comp, chunk := s.chunking(pos, end)
	s.chunkSize = chunk
	switch s.comp {
	case "", "keep":
		s.comp = comp
	case "none":
		s.comp = CompressionNone
	}
	for pos < end {
		next, stop, err := s.record(pos, end)
		if err != nil {
			return err
		}
		if stop {
			break
		}
		pos = next
	}
	return s.finish()
}

// chunking returns the compression of the first chunk from pos ("" when
// there is none) and the largest uncompressed size of the chunks (at
// least 4 KiB, at most DefaultChunkSize; the file's size when it has no
// chunk), following the records' lengths only: the output is chunked as
// the input was.
func (s *salvager) chunking(pos, end int64) (comp string, size int) {
	comp, size = CompressionNone, 4096
	first := true
	it := recIter{b: s.r.b[pos:end], base: pos}
	for {
		rec, ok, _ := it.next()
		if !ok {
			if first { // no chunk: messages outside chunks, as much as the file holds
				size = min(DefaultChunkSize, max(size, len(s.r.b)))
			}
			return comp, size
		}
		if rec.op != OpChunk {
			continue
		}
		d := dec{b: rec.body}
		d.u64()
		d.u64()
		usize := d.u64()
		d.u32()
		c := compressionName(d.bytes32())
		if first && (c == CompressionLZ4 || c == CompressionZstd) {
			comp = c
		}
		first = false
		if !d.bad {
			size = max(size, int(min(usize, DefaultChunkSize)))
		}
	}
}

// validOp reports whether op is an opcode the specification defines or
// leaves to custom records (0x80 and up).
func validOp(op Opcode) bool { return op >= OpHeader && op <= OpDataEnd || op >= 0x80 }

// record handles the record at pos and returns where the next one starts;
// stop is set at the end of the data section.
func (s *salvager) record(pos, end int64) (next int64, stop bool, err error) {
	rest := s.r.b[pos:end]
	cut := end == int64(len(s.r.b)) // no footer: the data runs to the end of the file
	if len(rest) < recordPrefixLen {
		s.lose(LostRange{Offset: pos, Length: end - pos, Reason: "the file ends inside a record's opcode and length"})
		s.rep.Truncated = true
		return end, true, nil
	}
	op, n := Opcode(rest[0]), le.Uint64(rest[1:])
	if !validOp(op) {
		return s.damaged(pos, end, fmt.Sprintf("opcode 0x%02x is not an MCAP record", uint8(op)))
	}
	if n > uint64(len(rest)-recordPrefixLen) {
		if !cut {
			return s.damaged(pos, end, fmt.Sprintf("record (opcode 0x%02x) length %d runs past the data section", uint8(op), n))
		}
		s.rep.Truncated = true
		if op == OpChunk {
			return end, true, s.partialChunk(pos, rest)
		}
		s.lose(LostRange{Offset: pos, Length: end - pos, Messages: boolInt(op == OpMessage),
			Reason: fmt.Sprintf("the file ends inside a record (opcode 0x%02x, %d of %d bytes)", uint8(op), len(rest)-recordPrefixLen, n)})
		return end, true, nil
	}
	rec := record{op: op, body: rest[recordPrefixLen : recordPrefixLen+int(n) : recordPrefixLen+int(n)], at: pos}
	next = pos + recordPrefixLen + int64(n)
	if op != OpMessageIndex {
		s.counting = nil
	}
	switch op {
	case OpDataEnd, OpFooter:
		return next, true, nil
	case OpChunk:
		return next, false, s.chunk(rec)
	case OpMessageIndex:
		if l := s.counting; l != nil {
			d := dec{b: rec.body}
			d.u16()
			if e := d.bytes32(); !d.bad && len(e)%indexEntryLen == 0 {
				l.Messages = max(l.Messages, 0) + int64(len(e)/indexEntryLen)
				s.rep.LostMessages += uint64(len(e) / indexEntryLen)
			}
		}
	case OpAttachment:
		a, err := s.r.parseAttachment(rec)
		if err != nil {
			s.lose(LostRange{Offset: pos, Length: next - pos, Messages: 0, Reason: err.Error()})
			return next, false, nil
		}
		w, err := s.writer()
		if err != nil {
			return next, false, err
		}
		if err := w.AddAttachment(&a); err != nil {
			return next, false, err
		}
		s.rep.Attachments++
	default:
		if err := s.check(rec); err != nil {
			return s.damaged(pos, end, err.Error())
		}
		return next, false, s.visit(rec)
	}
	return next, false, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// damaged skips a damaged region from pos to the next intact chunk (or to
// end when there is none).
func (s *salvager) damaged(pos, end int64, reason string) (int64, bool, error) {
	at := s.resync(pos+1, end)
	if at < 0 {
		s.lose(LostRange{Offset: pos, Length: end - pos, Messages: -1, Reason: reason + "; no intact chunk after it"})
		return end, true, nil
	}
	s.lose(LostRange{Offset: pos, Length: at - pos, Messages: -1, Reason: reason})
	return at, false, nil
}

// resync returns the offset of the first chunk at or after from whose
// records decompress and match a CRC it stores, or -1.
func (s *salvager) resync(from, end int64) int64 {
	b := s.r.b
	for p := from; p+recordPrefixLen+chunkFixedLen+4+8 <= end; p++ {
		if Opcode(b[p]) != OpChunk {
			continue
		}
		n := le.Uint64(b[p+1:])
		if n > uint64(end-p-recordPrefixLen) {
			continue
		}
		body := b[p+recordPrefixLen : p+recordPrefixLen+int64(n)]
		d := dec{b: body}
		d.u64()
		d.u64()
		usize, ucrc := d.u64(), d.u32()
		comp := compressionName(d.bytes32())
		rl := d.u64()
		if d.bad || rl > uint64(len(d.b)) || ucrc == 0 || usize > s.r.opt.MaxChunkSize {
			continue
		}
		switch comp {
		case CompressionNone:
			if rl != usize {
				continue
			}
		case CompressionLZ4, CompressionZstd:
			if s.budget < usize {
				return -1
			}
			s.budget -= usize
		default:
			continue
		}
		var err error
		if _, s.buf, _, err = s.r.chunkRecords(record{op: OpChunk, body: body, at: p}, s.buf); err == nil {
			return p
		}
	}
	return -1
}

// chunk writes the records of an intact chunk, or reports it lost.
func (s *salvager) chunk(rec record) error {
	records, buf, _, err := s.r.chunkRecords(rec, s.buf)
	s.buf = buf
	if err == nil {
		err = s.checkRecords(records)
	}
	if err != nil {
		d := dec{b: rec.body}
		from, to := d.u64(), d.u64()
		l := s.lose(LostRange{Offset: rec.at, Length: recordPrefixLen + int64(len(rec.body)), Chunks: 1,
			Messages: s.countLost(rec), FromNs: from, ToNs: to, Reason: reasonOf(err)})
		if l.Messages < 0 {
			s.counting = l
		}
		return nil
	}
	s.rep.Chunks++
	return s.visitRecords(records)
}

// reasonOf is an error's text without the file name (the report names
// the file once).
func reasonOf(err error) string {
	var ce *CorruptError
	if errors.As(err, &ce) {
		return ce.Field + ": " + ce.Err.Error()
	}
	return err.Error()
}

// countLost counts the messages of a chunk whose CRC does not match, when
// its records decompress (-1 when they do not).
func (s *salvager) countLost(rec record) int64 {
	d := dec{b: rec.body}
	d.u64()
	d.u64()
	usize := d.u64()
	d.u32()
	comp := compressionName(d.bytes32())
	payload := d.bytes64()
	if d.bad || usize > s.r.opt.MaxChunkSize {
		return -1
	}
	records := payload
	if comp != CompressionNone {
		if s.budget < usize {
			return -1
		}
		s.budget -= usize
		var err error
		if s.buf, err = s.r.dc.decompress(s.buf, comp, payload, usize); err != nil {
			return -1
		}
		records = s.buf
	}
	n := int64(0)
	it := recIter{b: records}
	for {
		in, ok, trunc := it.next()
		if trunc {
			return -1
		}
		if !ok {
			return n
		}
		if in.op == OpMessage {
			n++
		}
	}
}

// partialChunk salvages the complete records at the start of a chunk cut
// by the end of the file.
func (s *salvager) partialChunk(pos int64, rest []byte) error {
	d := dec{b: rest[recordPrefixLen:]}
	from, to := d.u64(), d.u64()
	usize := d.u64()
	d.u32()
	comp := compressionName(d.bytes32())
	d.u64() // records length: past the end
	l := LostRange{Offset: pos, Length: int64(len(rest)), Chunks: 1, Messages: -1, FromNs: from, ToNs: to}
	if d.bad {
		l.Reason = "the file ends inside a chunk's header"
		s.lose(l)
		return nil
	}
	var records []byte
	switch {
	case usize > s.r.opt.MaxChunkSize:
		l.Reason = fmt.Sprintf("the file ends inside a chunk of %d bytes, over the limit %d", usize, s.r.opt.MaxChunkSize)
		s.lose(l)
		return nil
	case comp == CompressionNone:
		records = d.b[:min(uint64(len(d.b)), usize)]
	default:
		s.buf = s.r.dc.decompressPrefix(s.buf, comp, d.b, usize)
		records = s.buf
	}
	// complete records only, each one checked before any is written
	it := recIter{b: records}
	good := 0
	for {
		in, ok, trunc := it.next()
		if !ok || trunc || s.check(in) != nil {
			break
		}
		good = it.off
	}
	before := s.rep.Messages
	if err := s.visitRecords(records[:good]); err != nil {
		return err
	}
	got := s.rep.Messages - before
	s.rep.PartialMessages += got
	l.Reason = fmt.Sprintf("the file ends inside this chunk: %d messages salvaged from its first %d uncompressed bytes (of %d); the rest is lost",
		got, good, usize)
	s.lose(l)
	return nil
}

// check validates one record of the data section or of a chunk before
// anything of it is written.
func (s *salvager) check(rec record) error {
	switch rec.op {
	case OpSchema:
		if _, ok := parseSchema(rec.body); !ok {
			return fmt.Errorf("Schema at %d: %w", rec.at, ErrTruncated)
		}
	case OpChannel:
		if _, ok := parseChannel(rec.body); !ok {
			return fmt.Errorf("Channel at %d: %w", rec.at, ErrTruncated)
		}
	case OpMessage:
		if len(rec.body) < messageFixedLen {
			return fmt.Errorf("Message at %d: %w", rec.at, ErrTruncated)
		}
	case OpMetadata:
		d := dec{b: rec.body}
		d.str()
		d.strMap()
		if d.bad {
			return fmt.Errorf("Metadata at %d: %w", rec.at, ErrTruncated)
		}
	}
	return nil
}

// checkRecords validates every record of a chunk.
func (s *salvager) checkRecords(records []byte) error {
	it := recIter{b: records}
	for {
		in, ok, trunc := it.next()
		if trunc {
			return fmt.Errorf("%w: record at %d of the chunk runs past its end", ErrTruncated, in.at)
		}
		if !ok {
			return nil
		}
		if err := s.check(in); err != nil {
			return err
		}
	}
}

// visitRecords writes the (checked) records of a chunk.
func (s *salvager) visitRecords(records []byte) error {
	it := recIter{b: records}
	for {
		in, ok, _ := it.next()
		if !ok {
			return nil
		}
		if err := s.visit(in); err != nil {
			return err
		}
	}
}

// writer creates the output at its first use.
func (s *salvager) writer() (*Writer, error) {
	if s.w != nil {
		return s.w, nil
	}
	lib := s.library
	if lib == "" {
		lib = "edr-lite recover"
	}
	var err error
	s.w, err = NewWriter(s.out, Options{Profile: s.profile, Library: lib, Compression: s.comp, ChunkSize: s.chunkSize,
		Seal: s.stamp.Seal})
	return s.w, err
}

// hold counts bytes of schemas, channels and metadata kept, bounded as the
// Reader bounds them.
func (s *salvager) hold(n int, at int64, field string) error {
	return s.r.retain(&s.kept, n, at, field)
}

// visit writes one checked record: schemas and channels once per input
// id, messages on a known channel, metadata.
func (s *salvager) visit(rec record) error {
	switch rec.op {
	case OpSchema:
		sc, _ := parseSchema(rec.body)
		if sc.ID == 0 {
			return nil
		}
		_, err := s.schema(&sc, rec.at)
		return err
	case OpChannel:
		c, _ := parseChannel(rec.body)
		_, err := s.channel(&c, rec.at)
		return err
	case OpMessage:
		b := rec.body
		m := Message{ChannelID: le.Uint16(b), Sequence: le.Uint32(b[2:]), LogTime: le.Uint64(b[6:]),
			PublishTime: le.Uint64(b[14:]), Data: b[messageFixedLen:]}
		id, ok := s.chans[m.ChannelID]
		if !ok {
			c := s.known[m.ChannelID]
			if c == nil {
				s.rep.Orphans++
				return nil
			}
			var err error
			if id, err = s.channel(c, rec.at); err != nil {
				return err
			}
		}
		w, err := s.writer()
		if err != nil {
			return err
		}
		m.ChannelID = id
		if err := w.WriteMessage(&m); err != nil {
			return err
		}
		s.rep.Messages++
	case OpMetadata:
		md, err := s.r.parseMetadata(rec)
		if err != nil {
			return err
		}
		if err := s.hold(len(rec.body), rec.at, "Metadata"); err != nil {
			return err
		}
		w, err := s.writer()
		if err != nil {
			return err
		}
		if _, restamped := s.stamp.Metadata[md.Name]; restamped || md.Name == evidence.MetadataName {
			return nil
		}
		s.rep.Metadata++
		return w.AddMetadata(md.Name, md.KV)
	}
	return nil
}

func (s *salvager) schema(sc *Schema, at int64) (uint16, error) {
	if id, ok := s.schemas[sc.ID]; ok {
		return id, nil
	}
	if err := s.hold(len(sc.Name)+len(sc.Encoding)+len(sc.Data), at, "Schema"); err != nil {
		return 0, err
	}
	w, err := s.writer()
	if err != nil {
		return 0, err
	}
	id, err := w.AddSchema(sc.Name, sc.Encoding, sc.Data)
	if err != nil {
		return 0, err
	}
	s.schemas[sc.ID] = id
	s.rep.Schemas++
	return id, nil
}

// channel adds an input channel (once) and returns its output id. A
// schema whose record was lost comes from the summary, else the channel is
// written without it.
func (s *salvager) channel(c *Channel, at int64) (uint16, error) {
	if id, ok := s.chans[c.ID]; ok {
		return id, nil
	}
	if err := s.hold(len(c.Topic)+len(c.MessageEncoding)+16*len(c.Metadata), at, "Channel"); err != nil {
		return 0, err
	}
	var sid uint16
	if c.SchemaID != 0 {
		var ok bool
		if sid, ok = s.schemas[c.SchemaID]; !ok {
			if sc := s.knownSchemas[c.SchemaID]; sc != nil {
				var err error
				if sid, err = s.schema(sc, at); err != nil {
					return 0, err
				}
			}
		}
	}
	w, err := s.writer()
	if err != nil {
		return 0, err
	}
	id, err := w.AddChannel(sid, c.Topic, c.MessageEncoding, c.Metadata)
	if err != nil {
		return 0, err
	}
	s.chans[c.ID] = id
	s.rep.Channels++
	return id, nil
}

// finish closes the output (an empty, valid file when nothing was found).
func (s *salvager) finish() error {
	w, err := s.writer()
	if err != nil {
		return err
	}
	if err := s.addStamp(w); err != nil {
		return err
	}
	return w.Close()
}

// RecoverFile is Recover from the file at in to a new file at out,
// written as out.tmp, synced and renamed once complete (nothing is left
// behind on error).
func RecoverFile(in, out string, opts RecoverOptions) (*RecoverReport, error) {
	var b []byte
	m, err := mapFile(in)
	switch {
	case errors.Is(err, ErrNotSupported):
		if b, err = os.ReadFile(in); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		b = m.b
		defer m.close()
	}
	tmp := out + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	rep, err := Recover(in, b, bw, opts)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, out)
	}
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return rep, syncDir(filepath.Dir(out))
}
