package mcap

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"slices"
)

// DefaultMaxChunkSize bounds a chunk's uncompressed size when
// ReaderOptions.MaxChunkSize is zero: pack.DefaultMaxMemory (256 MiB), the
// memory limit of every edr-lite reader.
const DefaultMaxChunkSize = defaultMaxChunkSize

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// MaxChunkSize is the most memory the reader allocates from what a
	// file declares: the largest uncompressed chunk it inflates (larger
	// ones fail with ErrTooLarge, as do sizes the stored bytes cannot
	// produce), and the most decompressed chunks a Cursor holds at once
	// for chunks overlapping in time. DefaultMaxChunkSize when 0.
	MaxChunkSize uint64
}

// Reader reads an MCAP file held in memory: a read-only mapping (Open) or a
// byte slice (NewReader). It reads our files and other writers' files:
// chunked or not, with or without a summary, compressed with lz4 or zstd.
//
// A Reader is not safe for concurrent use (it reuses decompression
// buffers); open one per goroutine.
type Reader struct {
	b    []byte
	name string
	opt  ReaderOptions
	m    *mapping

	// Profile and Library are the Header's fields.
	Profile string
	Library string

	dataStart int64 // first record after the Header
	hasFooter bool
	footerAt  int64
	footer    struct {
		summaryStart, summaryOffsetStart uint64
		summaryCRC                       uint32
	}

	dc      decompressor
	scratch []byte
}

// Open maps path read-only and returns a Reader over it. Close unmaps.
func Open(path string, opt ReaderOptions) (*Reader, error) {
	m, err := mapFile(path)
	var b []byte
	switch {
	case errors.Is(err, ErrNotSupported):
		if b, err = os.ReadFile(path); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		b = m.b
	}
	r, err := NewReader(b, path, opt)
	if err != nil {
		if m != nil {
			err = errors.Join(err, m.close())
		}
		return nil, err
	}
	r.m = m
	return r, nil
}

// NewReader checks the leading magic and Header of b and returns a Reader.
// name labels errors. b must not change while the Reader is in use.
func NewReader(b []byte, name string, opt ReaderOptions) (*Reader, error) {
	if opt.MaxChunkSize == 0 {
		opt.MaxChunkSize = DefaultMaxChunkSize
	}
	// A chunk is inflated into a []byte: a larger limit would let a hostile
	// uncompressed_size turn negative (or wrap) as an int, above all on
	// 32-bit, and make retainBudget overflow.
	opt.MaxChunkSize = min(opt.MaxChunkSize, math.MaxInt)
	r := &Reader{b: b, name: name, opt: opt}
	r.dc.max = opt.MaxChunkSize
	if len(b) < magicLen || [8]byte(b[:8]) != Magic {
		return nil, r.corrupt(0, "magic", ErrBadMagic)
	}
	it := recIter{b: b[magicLen:], base: magicLen}
	h, ok, _ := it.next()
	if !ok {
		return nil, r.corrupt(magicLen, "Header", ErrTruncated)
	}
	if h.op != OpHeader {
		return nil, r.corrupt(magicLen, "Header", fmt.Errorf("%w: first record has opcode 0x%02x, want 0x01", ErrCorrupt, h.op))
	}
	d := dec{b: h.body}
	r.Profile = d.str()
	r.Library = d.str()
	if d.bad {
		return nil, r.corrupt(magicLen, "Header.library", ErrTruncated)
	}
	r.dataStart = magicLen + int64(it.off)
	r.readFooter()
	return r, nil
}

// readFooter finds a well-formed Footer before the trailing magic. A file
// without one (still being written, truncated) is read by scanning.
func (r *Reader) readFooter() {
	n := int64(len(r.b))
	at := n - magicLen - footerRecordLen
	if at < r.dataStart || [8]byte(r.b[n-magicLen:]) != Magic {
		return
	}
	f := r.b[at:]
	if Opcode(f[0]) != OpFooter || le.Uint64(f[1:]) != footerLen {
		return
	}
	r.hasFooter = true
	r.footerAt = at
	r.footer.summaryStart = le.Uint64(f[9:])
	r.footer.summaryOffsetStart = le.Uint64(f[17:])
	r.footer.summaryCRC = le.Uint32(f[25:])
}

// Close releases the mapping (if any). Bytes handed out by the Reader are
// invalid afterwards.
func (r *Reader) Close() error {
	r.dc.close()
	if r.m != nil {
		m := r.m
		r.m = nil
		r.b = nil
		return m.close()
	}
	return nil
}

func (r *Reader) corrupt(off int64, field string, err error) error {
	return &CorruptError{File: r.name, Offset: off, Field: field, Err: err}
}

// ChannelInfo is a channel with its counts.
type ChannelInfo struct {
	Channel
	Schema   *Schema // nil when SchemaID is 0 or unknown
	Messages uint64
	Bytes    uint64 // payload bytes; only when Info.Scanned
}

// Metadata is one Metadata record.
type Metadata struct {
	Name string
	KV   map[string]string
}

// Info summarizes a file for "edr-lite info".
type Info struct {
	Profile, Library string
	Channels         []ChannelInfo // by channel id
	Schemas          []Schema      // by schema id
	Messages         uint64
	StartTime        uint64 // earliest message log_time, 0 when no messages
	EndTime          uint64
	Chunks           int
	Compression      map[string]int // chunks per compression name ("" = none)
	Attachments      int
	Metadata         []Metadata
	// Scanned is true when the figures come from reading every record
	// (the file has no usable summary, or Info was asked to scan): then
	// ChannelInfo.Bytes is filled in and CRCs of the data were checked.
	Scanned bool
}

// Info returns the file's summary: from the summary section when the file
// has one with a Statistics record (no data is read), otherwise by scanning
// every record (as Scan does).
func (r *Reader) Info() (*Info, error) {
	if info, ok, err := r.summaryInfo(); err != nil || ok {
		return info, err
	}
	return r.Scan()
}

// Scan reads every record of the data section, checking chunk and data
// CRCs, and returns exact figures including payload bytes per channel.
func (r *Reader) Scan() (*Info, error) {
	info, _, err := r.scan(nil)
	return info, err
}

// scan is Scan with a hook called for every message after it is counted
// (v gives its chunk and record offsets). It also returns the channels by id.
func (r *Reader) scan(hook func(v *visitor, m *Message) error) (*Info, []*Channel, error) {
	return r.scanWith(hook, false)
}

// scanWith is scan, with the checks of Verify when strict.
func (r *Reader) scanWith(hook func(v *visitor, m *Message) error, strict bool) (*Info, []*Channel, error) {
	info := &Info{Profile: r.Profile, Library: r.Library, Compression: map[string]int{}, Scanned: true}
	chans := map[uint16]*ChannelInfo{}
	schemas := map[uint16]Schema{}
	var v visitor
	v = visitor{
		chunkAt: -1,
		strict:  strict,
		schema: func(s *Schema) {
			if _, ok := schemas[s.ID]; !ok {
				schemas[s.ID] = *s
			}
		},
		channel: func(c *Channel) {
			if _, ok := chans[c.ID]; !ok {
				chans[c.ID] = &ChannelInfo{Channel: *c}
			}
		},
		message: func(c *Channel, m *Message) error {
			ci := chans[c.ID]
			ci.Messages++
			ci.Bytes += uint64(len(m.Data))
			if info.Messages == 0 || m.LogTime < info.StartTime {
				info.StartTime = m.LogTime
			}
			if info.Messages == 0 || m.LogTime > info.EndTime {
				info.EndTime = m.LogTime
			}
			info.Messages++
			if hook != nil {
				return hook(&v, m)
			}
			return nil
		},
		other: func(rec record) error {
			switch rec.op {
			case OpChunk:
				info.Chunks++
			case OpAttachment:
				info.Attachments++
			case OpMetadata:
				if err := r.retain(&v.kept, len(rec.body), rec.at, "Metadata"); err != nil {
					return err
				}
				md, err := r.parseMetadata(rec)
				if err != nil {
					return err
				}
				info.Metadata = append(info.Metadata, md)
			}
			return nil
		},
		compression: func(name string) { info.Compression[name]++ },
	}
	if err := r.walk(&v); err != nil {
		return nil, nil, err
	}
	for _, id := range sortedKeys(schemas) {
		info.Schemas = append(info.Schemas, schemas[id])
	}
	for _, id := range sortedKeys(chans) {
		info.Channels = append(info.Channels, *chans[id])
	}
	info.linkSchemas()
	return info, v.chans, nil
}

func sortedKeys[V any](m map[uint16]V) []uint16 {
	ks := make([]uint16, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (info *Info) linkSchemas() {
	for i := range info.Channels {
		c := &info.Channels[i]
		for j := range info.Schemas {
			if info.Schemas[j].ID == c.SchemaID {
				c.Schema = &info.Schemas[j]
			}
		}
	}
}

// Messages calls fn for every message in file order (the order the writer
// wrote them; edr-lite writes in time order), decompressing chunks and
// checking their CRCs and the data section CRC. m and m.Data are reused:
// valid only until fn returns (copy what you keep). c is the message's
// channel, valid until the Reader is closed. An error from fn stops the
// walk and is returned as is.
func (r *Reader) Messages(fn func(c *Channel, m *Message) error) error {
	v := visitor{message: fn, chunkAt: -1}
	return r.walk(&v)
}

type visitor struct {
	schema      func(*Schema)
	channel     func(*Channel)
	message     func(*Channel, *Message) error
	other       func(record) error
	compression func(string)

	chans   []*Channel // by id
	msg     Message
	kept    uint64 // bytes of Schema, Channel and Metadata records retained
	chunkAt int64  // file offset of the chunk being walked, -1 outside chunks
	recAt   int64  // offset of the current record (in the chunk's records when chunkAt >= 0)

	// strict: Verify's checks (what may sit in a chunk, message indexes,
	// attachments); last is the last chunk walked, for its indexes.
	strict bool
	last   lastChunk
}

// retainBudget bounds what a walk keeps (schemas, channels, metadata,
// the Cursor's segments) so a hostile file cannot make the reader hold more
// than the memory limit, however well its chunks compress or however many
// tiny records it holds.
func (r *Reader) retainBudget() uint64 { return r.opt.MaxChunkSize }

// retainCost is what a kept record costs beyond its bytes, about: the
// struct, its strings and map, and the slices that hold it (a metadata
// record of 30 bytes costs close to 1 KiB held by the offline tools).
const retainCost = 1 << 10

func (r *Reader) retain(kept *uint64, n int, at int64, field string) error {
	*kept += uint64(n) + retainCost
	if *kept > r.retainBudget() {
		return r.corrupt(at, field, fmt.Errorf("%w: the schemas, channels, metadata or attachments kept need more than the reader's limit of %d MiB (offline tools: --max-memory)", ErrTooLarge, r.retainBudget()>>20))
	}
	return nil
}

// walk visits the data section: from after the Header to DataEnd (or the
// Footer, or the end of a file that has neither).
func (r *Reader) walk(v *visitor) error {
	end := int64(len(r.b))
	if r.hasFooter {
		end = r.footerAt
	}
	it := recIter{b: r.b[r.dataStart:end], base: r.dataStart}
	for {
		rec, ok, trunc := it.next()
		if trunc {
			return r.corrupt(rec.at, fmt.Sprintf("record (opcode 0x%02x) length", uint8(rec.op)), ErrTruncated)
		}
		if !ok {
			if r.hasFooter {
				return nil // footer without DataEnd: an older or streaming writer
			}
			return r.corrupt(end, "Footer", ErrTruncated)
		}
		switch rec.op {
		case OpDataEnd:
			d := dec{b: rec.body}
			crc := d.u32()
			if d.bad {
				return r.corrupt(rec.at, "DataEnd.data_section_crc", ErrTruncated)
			}
			if crc != 0 {
				if got := crc32.ChecksumIEEE(r.b[:rec.at]); got != crc {
					return r.corrupt(rec.at, "DataEnd.data_section_crc",
						fmt.Errorf("%w: computed 0x%08x, stored 0x%08x", ErrCRC, got, crc))
				}
			}
			return nil
		case OpFooter:
			return nil
		case OpChunk:
			if err := r.walkChunk(v, rec); err != nil {
				return err
			}
			if v.other != nil {
				if err := v.other(rec); err != nil {
					return err
				}
			}
		default:
			if v.strict {
				if err := r.checkRecord(v, rec); err != nil {
					return err
				}
			}
			if err := r.visitRecord(v, rec, ""); err != nil {
				return err
			}
		}
	}
}

func (r *Reader) walkChunk(v *visitor, rec record) error {
	var err error
	var records []byte
	var comp string
	records, r.scratch, comp, err = r.chunkRecords(rec, r.scratch)
	if err != nil {
		return err
	}
	if v.compression != nil {
		v.compression(comp)
	}
	v.chunkAt = rec.at
	defer func() { v.chunkAt = -1 }()
	v.last = lastChunk{at: rec.at, records: records, seen: true}
	it := recIter{b: records}
	for {
		in, ok, trunc := it.next()
		if trunc {
			return r.corrupt(rec.at, fmt.Sprintf("Chunk.records+%d: record length", in.at), ErrTruncated)
		}
		if !ok {
			return nil
		}
		if v.strict && !inChunk(in.op) {
			return r.corrupt(rec.at, fmt.Sprintf("Chunk.records+%d: opcode", in.at),
				fmt.Errorf("%w: a record of opcode 0x%02x inside a chunk (only Schema, Channel and Message belong there)", ErrCorrupt, uint8(in.op)))
		}
		if err := r.visitRecord(v, in, "chunk"); err != nil {
			return err
		}
	}
}

// chunkRecords returns the uncompressed records of a Chunk record,
// decompressing into buf (returned, possibly grown) and checking the CRC.
// Uncompressed records alias the file.
func (r *Reader) chunkRecords(rec record, buf []byte) (records, bufOut []byte, comp string, err error) {
	d := dec{b: rec.body}
	d.u64() // message_start_time
	d.u64() // message_end_time
	usize := d.u64()
	ucrc := d.u32()
	comp = compressionName(d.bytes32())
	payload := d.bytes64()
	if d.bad {
		return nil, buf, comp, r.corrupt(rec.at, "Chunk", ErrTruncated)
	}
	if comp == CompressionNone {
		if uint64(len(payload)) != usize {
			return nil, buf, comp, r.corrupt(rec.at, "Chunk.uncompressed_size",
				fmt.Errorf("%w: %d, records field holds %d bytes", ErrCorrupt, usize, len(payload)))
		}
		records = payload
	} else {
		if err := checkDecompressed(comp, len(payload), usize, r.opt.MaxChunkSize); err != nil {
			return nil, buf, comp, r.corrupt(rec.at, "Chunk.uncompressed_size", err)
		}
		buf, err = r.dc.decompress(buf, comp, payload, usize)
		if err != nil {
			return nil, buf, comp, r.corrupt(rec.at, "Chunk.records", err)
		}
		records = buf
	}
	if ucrc != 0 {
		if got := crc32.ChecksumIEEE(records); got != ucrc {
			return nil, buf, comp, r.corrupt(rec.at, "Chunk.uncompressed_crc",
				fmt.Errorf("%w: computed 0x%08x, stored 0x%08x", ErrCRC, got, ucrc))
		}
	}
	return records, buf, comp, nil
}

// compressionName returns Chunk.compression as a string, without
// allocating for the names this package knows.
func compressionName(b []byte) string {
	switch string(b) {
	case CompressionNone:
		return CompressionNone
	case CompressionLZ4:
		return CompressionLZ4
	case CompressionZstd:
		return CompressionZstd
	}
	return string(b)
}

// visitRecord handles one record of the data section or of a chunk
// (inChunk != ""; then rec.at is relative to the chunk's records and
// errors name the chunk).
func (r *Reader) visitRecord(v *visitor, rec record, inChunk string) error {
	fail := func(field string, err error) error {
		if inChunk != "" {
			field = fmt.Sprintf("Chunk.records+%d: %s", rec.at, field)
		}
		return r.corrupt(rec.at, field, err)
	}
	switch rec.op {
	case OpSchema:
		s, ok := parseSchema(rec.body)
		if !ok {
			return fail("Schema", ErrTruncated)
		}
		if s.ID != 0 && v.schema != nil {
			if err := r.retain(&v.kept, len(rec.body), rec.at, "Schema"); err != nil {
				return err
			}
			v.schema(&s)
		}
	case OpChannel:
		c, ok := parseChannel(rec.body)
		if !ok {
			return fail("Channel", ErrTruncated)
		}
		if int(c.ID) >= len(v.chans) {
			v.chans = slices.Grow(v.chans, int(c.ID)+1-len(v.chans))[:int(c.ID)+1]
		}
		if v.chans[c.ID] == nil {
			if err := r.retain(&v.kept, len(rec.body), rec.at, "Channel"); err != nil {
				return err
			}
			v.chans[c.ID] = &c
			if v.channel != nil {
				v.channel(&c)
			}
		}
	case OpMessage:
		b := rec.body
		if len(b) < messageFixedLen {
			return fail("Message", ErrTruncated)
		}
		m := &v.msg
		m.ChannelID = le.Uint16(b)
		m.Sequence = le.Uint32(b[2:])
		m.LogTime = le.Uint64(b[6:])
		m.PublishTime = le.Uint64(b[14:])
		m.Data = b[messageFixedLen:]
		v.recAt = rec.at
		if int(m.ChannelID) >= len(v.chans) || v.chans[m.ChannelID] == nil {
			return fail("Message.channel_id", fmt.Errorf("%w: %d", ErrUnknownChannel, m.ChannelID))
		}
		if v.message != nil {
			return v.message(v.chans[m.ChannelID], m)
		}
	default:
		if v.other != nil {
			return v.other(rec)
		}
	}
	return nil
}

func parseSchema(b []byte) (Schema, bool) {
	d := dec{b: b}
	s := Schema{ID: d.u16(), Name: d.str(), Encoding: d.str()}
	s.Data = slices.Clone(d.bytes32())
	return s, !d.bad
}

func parseChannel(b []byte) (Channel, bool) {
	d := dec{b: b}
	c := Channel{ID: d.u16(), SchemaID: d.u16(), Topic: d.str(), MessageEncoding: d.str()}
	c.Metadata = d.strMap()
	return c, !d.bad
}

func (r *Reader) parseMetadata(rec record) (Metadata, error) {
	d := dec{b: rec.body}
	md := Metadata{Name: d.str(), KV: d.strMap()}
	if d.bad {
		return Metadata{}, r.corrupt(rec.at, "Metadata", ErrTruncated)
	}
	return md, nil
}

// summaryInfo builds Info from the summary section. ok is false when the
// file has no summary with Statistics and Channels (then the caller scans).
func (r *Reader) summaryInfo() (*Info, bool, error) {
	if !r.hasFooter || r.footer.summaryStart == 0 {
		return nil, false, nil
	}
	ss := r.footer.summaryStart
	if ss < uint64(r.dataStart) || ss > uint64(r.footerAt) {
		return nil, false, r.corrupt(r.footerAt, "Footer.summary_start",
			fmt.Errorf("%w: %d outside [%d, %d]", ErrCorrupt, ss, r.dataStart, r.footerAt))
	}
	if so := r.footer.summaryOffsetStart; so != 0 && (so < ss || so > uint64(r.footerAt)) {
		return nil, false, r.corrupt(r.footerAt, "Footer.summary_offset_start",
			fmt.Errorf("%w: %d outside [%d, %d]", ErrCorrupt, so, ss, r.footerAt))
	}
	if c := r.footer.summaryCRC; c != 0 {
		covered := r.b[ss : r.footerAt+recordPrefixLen+8+8]
		if got := crc32.ChecksumIEEE(covered); got != c {
			return nil, false, r.corrupt(r.footerAt, "Footer.summary_crc",
				fmt.Errorf("%w: computed 0x%08x, stored 0x%08x", ErrCRC, got, c))
		}
	}
	info := &Info{Profile: r.Profile, Library: r.Library, Compression: map[string]int{}}
	var stats, haveChannels bool
	counts := map[uint16]uint64{}
	var kept uint64
	seenCh := map[uint16]bool{}
	seenSc := map[uint16]bool{}
	it := recIter{b: r.b[ss:r.footerAt], base: int64(ss)}
	for {
		rec, ok, trunc := it.next()
		if trunc {
			return nil, false, r.corrupt(rec.at, "summary record length", ErrTruncated)
		}
		if !ok {
			break
		}
		d := dec{b: rec.body}
		switch rec.op {
		case OpSchema:
			s, ok := parseSchema(rec.body)
			if !ok {
				return nil, false, r.corrupt(rec.at, "Schema", ErrTruncated)
			}
			if s.ID != 0 && !seenSc[s.ID] {
				seenSc[s.ID] = true
				info.Schemas = append(info.Schemas, s)
			}
		case OpChannel:
			c, ok := parseChannel(rec.body)
			if !ok {
				return nil, false, r.corrupt(rec.at, "Channel", ErrTruncated)
			}
			haveChannels = true
			if !seenCh[c.ID] {
				seenCh[c.ID] = true
				info.Channels = append(info.Channels, ChannelInfo{Channel: c})
			}
		case OpStatistics:
			stats = true
			info.Messages = d.u64()
			d.u16() // schema_count
			d.u32() // channel_count
			info.Attachments = int(d.u32())
			d.u32() // metadata_count
			info.Chunks = int(d.u32())
			info.StartTime = d.u64()
			info.EndTime = d.u64()
			d.u16u64Map(func(k uint16, v uint64) { counts[k] = v })
			if d.bad {
				return nil, false, r.corrupt(rec.at, "Statistics", ErrTruncated)
			}
		case OpChunkIndex:
			d.take(8 + 8 + 8 + 8)
			d.u16u64Map(func(uint16, uint64) {})
			d.u64()
			comp := d.str()
			if d.bad {
				return nil, false, r.corrupt(rec.at, "ChunkIndex", ErrTruncated)
			}
			info.Compression[comp]++
		case OpMetadataIndex:
			off, length, name := d.u64(), d.u64(), d.str()
			if d.bad {
				return nil, false, r.corrupt(rec.at, "MetadataIndex", ErrTruncated)
			}
			// Indexes may point at the same bytes many times: bound the total.
			if err := r.retain(&kept, int(min(length, uint64(len(r.b)))), rec.at, "MetadataIndex"); err != nil {
				return nil, false, err
			}
			md, err := r.metadataAt(off, length, name)
			if err != nil {
				return nil, false, err
			}
			info.Metadata = append(info.Metadata, md)
		}
	}
	if !stats || (!haveChannels && info.Messages > 0) {
		return nil, false, nil
	}
	slices.SortFunc(info.Channels, func(a, b ChannelInfo) int { return int(a.ID) - int(b.ID) })
	slices.SortFunc(info.Schemas, func(a, b Schema) int { return int(a.ID) - int(b.ID) })
	for i := range info.Channels {
		info.Channels[i].Messages = counts[info.Channels[i].ID]
	}
	info.linkSchemas()
	return info, true, nil
}

func (r *Reader) metadataAt(off, length uint64, name string) (Metadata, error) {
	if off < uint64(r.dataStart) || off > uint64(len(r.b)) || length > uint64(len(r.b))-off || length < recordPrefixLen {
		return Metadata{}, r.corrupt(int64(r.footerAt), "MetadataIndex.offset",
			fmt.Errorf("%w: metadata %q at %d+%d outside the file", ErrCorrupt, name, off, length))
	}
	it := recIter{b: r.b[off : off+length], base: int64(off)}
	rec, ok, _ := it.next()
	if !ok || rec.op != OpMetadata {
		return Metadata{}, r.corrupt(int64(off), "MetadataIndex.offset",
			fmt.Errorf("%w: no Metadata record %q there", ErrCorrupt, name))
	}
	return r.parseMetadata(rec)
}
