package mcap

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
)

// ErrNonconformant marks a Doctor problem: the bytes are readable but do
// not follow the specification (or disagree with each other).
var ErrNonconformant = errors.New("mcap: not conformant")

// maxDoctorProblems bounds the problems Doctor lists (a broken index can
// disagree with every record).
const maxDoctorProblems = 100

// Doctor checks an MCAP file against the specification beyond what reading
// it needs, as the MCAP CLI's "doctor" does: opcodes, schema id 0, records
// that redefine an id differently, messages and channels referring to ids
// not yet defined, each chunk's time range, compressed and uncompressed
// sizes against its records, the MessageIndex records after each chunk
// against its messages, DataEnd's CRC, the summary (its CRC, the records
// it may hold, schemas and channels equal to the data section's, the
// Statistics against the data, one ChunkIndex per chunk, one
// AttachmentIndex per Attachment (whose CRC is checked) and one
// MetadataIndex per Metadata record pointing at them, SummaryOffset groups
// covering exactly their records) and the footer. Each problem is a
// *CorruptError wrapping ErrNonconformant (or the reader's error) with the
// offset and record; at most 100 are listed. A file that cannot be read
// at all is one problem.
func Doctor(name string, b []byte, opts ReaderOptions) []*CorruptError {
	r, err := NewReader(b, name, opts)
	if err != nil {
		ce, _ := err.(*CorruptError)
		if ce == nil {
			ce = &CorruptError{File: name, Err: err}
		}
		return []*CorruptError{ce}
	}
	d := &doctor{r: r, schemas: map[uint16]Schema{}, chans: map[uint16]Channel{}, counts: map[uint16]uint64{},
		chunkAt: map[int64]*chunkFacts{}, mdAt: map[int64]string{}, attAt: map[int64]Attachment{}, attLen: map[int64]uint64{}}
	d.data()
	d.summary()
	return d.problems
}

type chunkFacts struct {
	at, length        int64
	start, end, usize uint64
	csize             uint64
	comp              string
	index             map[uint16][]indexEntry // computed from its messages
	indexAt           map[uint16]int64        // MessageIndex record offsets after it
	indexLen          uint64                  // bytes of those records
}

type doctor struct {
	r        *Reader
	problems []*CorruptError
	schemas  map[uint16]Schema
	chans    map[uint16]Channel
	counts   map[uint16]uint64 // messages per channel
	messages uint64
	start    uint64
	end      uint64
	chunks   []*chunkFacts
	chunkAt  map[int64]*chunkFacts
	mdAt     map[int64]string // Metadata record offset -> name
	mdLen    map[int64]int64
	attach   int
	attAt    map[int64]Attachment // Attachment records by offset (Data: nil)
	attLen   map[int64]uint64     // their record lengths
	dataEnd  int64                // offset of DataEnd, -1 when none
	endAfter int64                // offset of the record after DataEnd
}

func (d *doctor) bad(at int64, field, format string, a ...any) {
	if len(d.problems) >= maxDoctorProblems {
		return
	}
	d.problems = append(d.problems, &CorruptError{File: d.r.name, Offset: at, Field: field,
		Err: fmt.Errorf("%w: %s", ErrNonconformant, fmt.Sprintf(format, a...))})
}

func (d *doctor) fail(err error) {
	if ce, ok := err.(*CorruptError); ok && len(d.problems) < maxDoctorProblems {
		d.problems = append(d.problems, ce)
	}
}

func reservedOp(op Opcode) bool { return op == 0 || op > OpDataEnd && op < 0x80 }

// data walks the data section.
func (d *doctor) data() {
	r := d.r
	d.dataEnd = -1
	d.mdLen = map[int64]int64{}
	end := int64(len(r.b))
	if r.hasFooter {
		end = r.footerAt
	} else {
		d.bad(int64(len(r.b)), "Footer", "the file has no footer (and trailing magic)")
	}
	it := recIter{b: r.b[r.dataStart:end], base: r.dataStart}
	var last *chunkFacts // the chunk MessageIndex records may follow
	for {
		rec, ok, trunc := it.next()
		if trunc {
			d.fail(r.corrupt(rec.at, "record length", ErrTruncated))
			return
		}
		if !ok {
			d.bad(end, "DataEnd", "the data section has no DataEnd record")
			return
		}
		if rec.op != OpMessageIndex {
			if last != nil {
				d.checkIndexes(last)
			}
			last = nil
		}
		switch rec.op {
		case OpDataEnd:
			d.dataEnd = rec.at
			d.endAfter = rec.at + recordPrefixLen + int64(len(rec.body))
			dd := dec{b: rec.body}
			if crc := dd.u32(); crc != 0 && crc32.ChecksumIEEE(r.b[:rec.at]) != crc {
				d.bad(rec.at, "DataEnd.data_section_crc", "does not match the data section")
			}
			return
		case OpFooter:
			d.bad(rec.at, "Footer", "a Footer inside the data section (no DataEnd before it)")
			return
		case OpHeader:
			d.bad(rec.at, "Header", "a second Header record")
		case OpChunk:
			last = d.chunk(rec)
		case OpMessageIndex:
			if last == nil {
				d.bad(rec.at, "MessageIndex", "not after a chunk")
				continue
			}
			dd := dec{b: rec.body}
			ch := dd.u16()
			entries := dd.bytes32()
			if dd.bad || len(entries)%indexEntryLen != 0 {
				d.bad(rec.at, "MessageIndex", "malformed")
				continue
			}
			if _, dup := last.indexAt[ch]; dup {
				d.bad(rec.at, "MessageIndex.channel_id", "a second index of channel %d for the chunk at %d", ch, last.at)
			}
			last.indexAt[ch] = rec.at
			last.indexLen += recordPrefixLen + uint64(len(rec.body))
			want := last.index[ch]
			got := make([]indexEntry, 0, len(entries)/indexEntryLen)
			for i := 0; i < len(entries); i += indexEntryLen {
				got = append(got, indexEntry{le.Uint64(entries[i:]), le.Uint64(entries[i+8:])})
			}
			slices.SortFunc(got, cmpEntry)
			if !slices.Equal(got, want) {
				d.bad(rec.at, "MessageIndex.records", "channel %d: %d entries, the chunk at %d holds %d messages of it (or at other offsets or times)",
					ch, len(got), last.at, len(want))
			}
		case OpAttachment:
			d.attach++
			a, err := r.parseAttachment(rec)
			if err != nil {
				d.fail(err)
				continue
			}
			a.Data = nil
			d.attAt[rec.at] = a
			d.attLen[rec.at] = recordPrefixLen + uint64(len(rec.body))
		case OpMetadata:
			if _, err := r.parseMetadata(rec); err != nil {
				d.fail(err)
				continue
			}
			dd := dec{b: rec.body}
			d.mdAt[rec.at] = dd.str()
			d.mdLen[rec.at] = recordPrefixLen + int64(len(rec.body))
		case OpSchema, OpChannel, OpMessage:
			d.record(rec, "")
		case OpChunkIndex, OpAttachmentIndex, OpMetadataIndex, OpStatistics, OpSummaryOffset:
			d.bad(rec.at, fmt.Sprintf("record (opcode 0x%02x)", uint8(rec.op)), "a summary record in the data section")
		default:
			if reservedOp(rec.op) {
				d.bad(rec.at, "opcode", "0x%02x is reserved", uint8(rec.op))
			}
		}
	}
}

// record checks a Schema, Channel or Message record (in a chunk when
// inChunk is its label).
func (d *doctor) record(rec record, inChunk string) (ch uint16, logTime uint64, isMsg bool) {
	field := func(f string) string {
		if inChunk != "" {
			return inChunk + ": " + f
		}
		return f
	}
	switch rec.op {
	case OpSchema:
		s, ok := parseSchema(rec.body)
		if !ok {
			d.bad(rec.at, field("Schema"), "malformed")
			return
		}
		if s.ID == 0 {
			d.bad(rec.at, field("Schema.id"), "0 is reserved (no schema)")
			return
		}
		if old, seen := d.schemas[s.ID]; seen && !sameSchema(&old, &s) {
			d.bad(rec.at, field("Schema.id"), "schema %d redefined differently", s.ID)
		}
		d.schemas[s.ID] = s
	case OpChannel:
		c, ok := parseChannel(rec.body)
		if !ok {
			d.bad(rec.at, field("Channel"), "malformed")
			return
		}
		if _, known := d.schemas[c.SchemaID]; c.SchemaID != 0 && !known {
			d.bad(rec.at, field("Channel.schema_id"), "channel %d refers to schema %d, not defined before it", c.ID, c.SchemaID)
		}
		if old, seen := d.chans[c.ID]; seen && !sameChannel(&old, &c) {
			d.bad(rec.at, field("Channel.id"), "channel %d redefined differently", c.ID)
		}
		d.chans[c.ID] = c
	case OpMessage:
		if len(rec.body) < messageFixedLen {
			d.bad(rec.at, field("Message"), "malformed")
			return
		}
		ch, logTime = le.Uint16(rec.body), le.Uint64(rec.body[6:])
		if _, known := d.chans[ch]; !known {
			d.bad(rec.at, field("Message.channel_id"), "channel %d is not defined before it", ch)
		}
		if d.messages == 0 || logTime < d.start {
			d.start = logTime
		}
		if d.messages == 0 || logTime > d.end {
			d.end = logTime
		}
		d.messages++
		d.counts[ch]++
		return ch, logTime, true
	}
	return
}

func sameSchema(a, b *Schema) bool {
	return a.Name == b.Name && a.Encoding == b.Encoding && bytes.Equal(a.Data, b.Data)
}

func sameChannel(a, b *Channel) bool {
	return a.SchemaID == b.SchemaID && a.Topic == b.Topic && a.MessageEncoding == b.MessageEncoding && maps.Equal(a.Metadata, b.Metadata)
}

// chunk checks a chunk and its records.
func (d *doctor) chunk(rec record) *chunkFacts {
	dd := dec{b: rec.body}
	c := &chunkFacts{at: rec.at, length: recordPrefixLen + int64(len(rec.body)), start: dd.u64(), end: dd.u64(), usize: dd.u64(),
		index: map[uint16][]indexEntry{}, indexAt: map[uint16]int64{}}
	dd.u32()
	c.comp = string(dd.bytes32())
	c.csize = uint64(len(dd.bytes64()))
	d.chunks = append(d.chunks, c)
	d.chunkAt[rec.at] = c
	if dd.bad { // bytes after the fields are fields of a later version
		d.bad(rec.at, "Chunk", "malformed (the record ends inside its fields)")
	}
	records, buf, _, err := d.r.chunkRecords(rec, d.r.scratch)
	d.r.scratch = buf
	if err != nil {
		d.fail(err)
		return c
	}
	var first, last uint64
	n := 0
	it := recIter{b: records}
	label := fmt.Sprintf("chunk@%d", rec.at)
	for {
		in, ok, trunc := it.next()
		if trunc {
			d.bad(rec.at, label, "a record at %d runs past the chunk's records", in.at)
			break
		}
		if !ok {
			break
		}
		switch in.op {
		case OpSchema, OpChannel, OpMessage:
		default:
			d.bad(rec.at, label, "record at %d has opcode 0x%02x: a chunk holds Schema, Channel and Message records only", in.at, uint8(in.op))
			continue
		}
		ch, t, isMsg := d.record(in, label)
		if !isMsg {
			continue
		}
		c.index[ch] = append(c.index[ch], indexEntry{t, uint64(in.at)})
		if n == 0 || t < first {
			first = t
		}
		if n == 0 || t > last {
			last = t
		}
		n++
	}
	for ch := range c.index {
		slices.SortFunc(c.index[ch], cmpEntry)
	}
	if n > 0 && (c.start != first || c.end != last) {
		d.bad(rec.at, "Chunk.message_start_time", "%d..%d, its messages span %d..%d", c.start, c.end, first, last)
	}
	return c
}

// checkIndexes checks that every channel with messages in chunk c got its
// MessageIndex after it (when the chunk has any).
func (d *doctor) checkIndexes(c *chunkFacts) {
	if len(c.indexAt) == 0 {
		return // the specification lets a writer leave message indexes out
	}
	for ch := range c.index {
		if _, ok := c.indexAt[ch]; !ok {
			d.bad(c.at, "MessageIndex", "channel %d has messages in the chunk at %d but no MessageIndex after it", ch, c.at)
		}
	}
}

// summary checks the summary section and the footer against the data.
func (d *doctor) summary() {
	r := d.r
	if !r.hasFooter {
		return
	}
	if _, _, err := r.summaryInfo(); err != nil {
		d.fail(err)
		return
	}
	ss, so := r.footer.summaryStart, r.footer.summaryOffsetStart
	if ss == 0 {
		if so != 0 {
			d.bad(r.footerAt, "Footer.summary_offset_start", "set without a summary")
		}
		return
	}
	if d.dataEnd >= 0 && ss != uint64(d.endAfter) {
		d.bad(r.footerAt, "Footer.summary_start", "%d, the summary should start after DataEnd at %d", ss, d.endAfter)
	}
	offEnd := uint64(r.footerAt)
	if so != 0 {
		offEnd = so
	}
	type group struct{ start, length uint64 }
	groups := map[Opcode]group{}
	byOp := map[Opcode][]record{}
	var stats *record
	chunkIdx := map[int64]bool{}
	mdIdx := map[int64]bool{}
	attIdx := map[int64]bool{}
	it := recIter{b: r.b[ss:r.footerAt], base: int64(ss)}
	for {
		rec, ok, _ := it.next()
		if !ok {
			break
		}
		inOffsets := uint64(rec.at) >= offEnd
		if inOffsets != (rec.op == OpSummaryOffset) {
			d.bad(rec.at, fmt.Sprintf("summary record (opcode 0x%02x)", uint8(rec.op)), "SummaryOffset records, and only they, follow summary_offset_start")
		}
		dd := dec{b: rec.body}
		switch rec.op {
		case OpSchema:
			s, _ := parseSchema(rec.body)
			if old, ok := d.schemas[s.ID]; !ok || !sameSchema(&old, &s) {
				d.bad(rec.at, "summary Schema", "schema %d is not the data section's", s.ID)
			}
		case OpChannel:
			c, _ := parseChannel(rec.body)
			if old, ok := d.chans[c.ID]; !ok || !sameChannel(&old, &c) {
				d.bad(rec.at, "summary Channel", "channel %d is not the data section's", c.ID)
			}
		case OpStatistics:
			if stats != nil {
				d.bad(rec.at, "Statistics", "a second Statistics record")
			}
			rc := rec
			stats = &rc
		case OpChunkIndex:
			d.chunkIndex(rec, chunkIdx)
		case OpMetadataIndex:
			off, length, name := dd.u64(), dd.u64(), dd.str()
			if got, ok := d.mdAt[int64(off)]; !ok || got != name || d.mdLen[int64(off)] != int64(length) {
				d.bad(rec.at, "MetadataIndex", "%q at %d+%d is not a Metadata record of the data section", name, off, length)
			}
			mdIdx[int64(off)] = true
		case OpAttachmentIndex:
			off, length, logTime, createTime, size, name, media := dd.u64(), dd.u64(), dd.u64(), dd.u64(), dd.u64(), dd.str(), dd.str()
			a, ok := d.attAt[int64(off)]
			switch {
			case dd.bad:
				d.bad(rec.at, "AttachmentIndex", "malformed")
			case !ok || d.attLen[int64(off)] != length:
				d.bad(rec.at, "AttachmentIndex", "%q at %d+%d is not an Attachment record of the data section", name, off, length)
			case a.Name != name || a.MediaType != media || a.LogTime != logTime || a.CreateTime != createTime || attSize(d.r, int64(off)) != size:
				d.bad(rec.at, "AttachmentIndex", "%q at %d does not describe the attachment there (name, media type, times or size differ)", name, off)
			}
			attIdx[int64(off)] = true
		case OpSummaryOffset:
			op := Opcode(dd.u8())
			start, length := dd.u64(), dd.u64()
			if _, dup := groups[op]; dup {
				d.bad(rec.at, "SummaryOffset", "a second offset for opcode 0x%02x", uint8(op))
			}
			groups[op] = group{start, length}
		default:
			d.bad(rec.at, fmt.Sprintf("summary record (opcode 0x%02x)", uint8(rec.op)), "not a record the summary holds")
		}
		if rec.op != OpSummaryOffset {
			byOp[rec.op] = append(byOp[rec.op], rec)
		}
	}
	for op, g := range groups {
		recs := byOp[op]
		if len(recs) == 0 {
			d.bad(int64(g.start), "SummaryOffset", "opcode 0x%02x has no records in the summary", uint8(op))
			continue
		}
		first, last := recs[0], recs[len(recs)-1]
		if g.start != uint64(first.at) || g.start+g.length != uint64(last.at)+recordPrefixLen+uint64(len(last.body)) {
			d.bad(int64(g.start), "SummaryOffset", "opcode 0x%02x: %d+%d does not cover its records exactly", uint8(op), g.start, g.length)
		}
	}
	if so != 0 && len(groups) > 0 {
		for op, recs := range byOp {
			if _, ok := groups[op]; !ok && len(recs) > 0 {
				d.bad(recs[0].at, "SummaryOffset", "no SummaryOffset for the summary's records of opcode 0x%02x", uint8(op))
			}
		}
	}
	for _, c := range d.chunks {
		if !chunkIdx[c.at] && len(byOp[OpChunkIndex]) > 0 {
			d.bad(c.at, "ChunkIndex", "the chunk at %d has no ChunkIndex", c.at)
		}
	}
	if len(byOp[OpAttachmentIndex]) > 0 {
		for at, a := range d.attAt {
			if !attIdx[at] {
				d.bad(at, "AttachmentIndex", "attachment %q has no AttachmentIndex", a.Name)
			}
		}
	}
	if len(byOp[OpMetadataIndex]) > 0 {
		for at, name := range d.mdAt {
			if !mdIdx[at] {
				d.bad(at, "MetadataIndex", "metadata %q has no MetadataIndex", name)
			}
		}
	}
	for id := range d.chans {
		if len(byOp[OpChannel]) > 0 && !slices.ContainsFunc(byOp[OpChannel], func(rec record) bool { return le.Uint16(rec.body) == id }) {
			d.bad(int64(ss), "summary Channel", "channel %d is missing from the summary", id)
		}
	}
	if stats != nil {
		d.statistics(*stats)
	}
}

// attSize is the data size of the Attachment record at off.
func attSize(r *Reader, off int64) uint64 {
	it := recIter{b: r.b[off:], base: off}
	rec, ok, _ := it.next()
	if !ok {
		return 0
	}
	a, err := r.parseAttachment(rec)
	if err != nil {
		return 0
	}
	return uint64(len(a.Data))
}

func (d *doctor) chunkIndex(rec record, seen map[int64]bool) {
	dd := dec{b: rec.body}
	start, end, at, length := dd.u64(), dd.u64(), int64(dd.u64()), dd.u64()
	idx := map[uint16]uint64{}
	dd.u16u64Map(func(k uint16, v uint64) { idx[k] = v })
	idxLen := dd.u64()
	comp := dd.str()
	csize, usize := dd.u64(), dd.u64()
	if dd.bad {
		d.bad(rec.at, "ChunkIndex", "malformed")
		return
	}
	c := d.chunkAt[at]
	if c == nil {
		d.bad(rec.at, "ChunkIndex.chunk_start_offset", "%d is not a chunk", at)
		return
	}
	if seen[at] {
		d.bad(rec.at, "ChunkIndex", "a second index of the chunk at %d", at)
	}
	seen[at] = true
	if start != c.start || end != c.end || length != uint64(c.length) || comp != c.comp || csize != c.csize || usize != c.usize {
		d.bad(rec.at, "ChunkIndex", "does not describe the chunk at %d (times, length, compression or sizes differ)", at)
	}
	if len(c.indexAt) > 0 || len(idx) > 0 {
		ok := len(idx) == len(c.indexAt) && idxLen == c.indexLen
		for ch, off := range idx {
			ok = ok && c.indexAt[ch] == int64(off)
		}
		if !ok {
			d.bad(rec.at, "ChunkIndex.message_index_offsets", "do not point at the MessageIndex records after the chunk at %d", at)
		}
	}
}

func (d *doctor) statistics(rec record) {
	dd := dec{b: rec.body}
	msgs, schemas, chans, att, md, chunks, start, end := dd.u64(), dd.u16(), dd.u32(), dd.u32(), dd.u32(), dd.u32(), dd.u64(), dd.u64()
	counts := map[uint16]uint64{}
	dd.u16u64Map(func(k uint16, v uint64) { counts[k] = v })
	f := func(field string, got, want uint64) {
		if got != want {
			d.bad(rec.at, "Statistics."+field, "%d, the data section holds %d", got, want)
		}
	}
	f("message_count", msgs, d.messages)
	f("schema_count", uint64(schemas), uint64(len(d.schemas)))
	f("channel_count", uint64(chans), uint64(len(d.chans)))
	f("attachment_count", uint64(att), uint64(d.attach))
	f("metadata_count", uint64(md), uint64(len(d.mdAt)))
	f("chunk_count", uint64(chunks), uint64(len(d.chunks)))
	if d.messages > 0 {
		f("message_start_time", start, d.start)
		f("message_end_time", end, d.end)
	}
	for ch, n := range d.counts {
		f(fmt.Sprintf("channel_message_counts[%d]", ch), counts[ch], n)
	}
	for ch, n := range counts {
		if _, ok := d.counts[ch]; !ok && n != 0 {
			f(fmt.Sprintf("channel_message_counts[%d]", ch), n, 0)
		}
	}
}
