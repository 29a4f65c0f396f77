// Verify: the checks a verifier adds to reading. A reader skips what it
// does not need (message and chunk indexes, attachments, the summary
// offsets) and tolerates a file cut after its data section; a verifier
// says where any of it is wrong.

package mcap

import (
	"fmt"
)

// lastChunk is the chunk a walk read last: the MessageIndex records after
// it index its records.
type lastChunk struct {
	at      int64
	records []byte
	seen    bool
}

// inChunk reports whether a record of opcode op may sit inside a chunk:
// Schema, Channel and Message, and opcodes the specification does not
// define (skipped, for forward compatibility).
func inChunk(op Opcode) bool {
	switch op {
	case OpSchema, OpChannel, OpMessage:
		return true
	}
	return op > OpDataEnd
}

// Verify reads every record as Scan does, with the checks a verifier adds:
// only Schema, Channel and Message records inside chunks; every
// MessageIndex entry names a Message of its channel at its log time in the
// chunk before it; attachments are well-formed with their CRC; the file ends
// with a Footer and the closing magic, so a file cut anywhere (in its
// summary too) is ErrTruncated at the record the cut falls in; and the
// summary's chunk indexes and summary offsets point at what they describe.
// info is the data section's figures (nil when it could not be read); err
// the first problem, a *CorruptError.
func (r *Reader) Verify() (info *Info, err error) {
	info, _, err = r.scanWith(nil, true)
	if err != nil {
		return nil, err
	}
	if err := r.checkEnd(); err != nil {
		return info, err
	}
	return info, r.checkSummary()
}

// checkRecord checks a record of the data section outside chunks.
func (r *Reader) checkRecord(v *visitor, rec record) error {
	switch rec.op {
	case OpHeader:
		return r.corrupt(rec.at, "Header", fmt.Errorf("%w: a second Header in the data section", ErrCorrupt))
	case OpMessageIndex:
		return r.checkMessageIndex(v, rec)
	case OpAttachment:
		// Bytes after the CRC are fields a later version of the
		// specification added: ignored, as it asks.
		_, err := r.parseAttachment(rec)
		return err
	}
	return nil
}

// checkMessageIndex checks that every entry of a MessageIndex record names
// a Message of its channel at its log time in the chunk before it.
func (r *Reader) checkMessageIndex(v *visitor, rec record) error {
	d := dec{b: rec.body}
	ch := d.u16()
	entries := d.bytes32()
	if d.bad || len(entries)%indexEntryLen != 0 {
		return r.corrupt(rec.at, "MessageIndex", ErrTruncated)
	}
	if len(entries) > 0 && !v.last.seen {
		return r.corrupt(rec.at, "MessageIndex", fmt.Errorf("%w: no chunk before it", ErrCorrupt))
	}
	recs := v.last.records
	for i := 0; i < len(entries); i += indexEntryLen {
		t, off := le.Uint64(entries[i:]), le.Uint64(entries[i+8:])
		field := fmt.Sprintf("MessageIndex.records[%d]", i/indexEntryLen)
		if off >= uint64(len(recs)) {
			return r.corrupt(rec.at, field, fmt.Errorf("%w: offset %d outside the chunk at %d (%d bytes of records)", ErrCorrupt, off, v.last.at, len(recs)))
		}
		it := recIter{b: recs, off: int(off)}
		m, ok, _ := it.next()
		if !ok || m.op != OpMessage || len(m.body) < messageFixedLen ||
			le.Uint16(m.body) != ch || le.Uint64(m.body[6:]) != t {
			return r.corrupt(rec.at, field, fmt.Errorf("%w: no Message of channel %d at log time %d at offset %d of the chunk at %d", ErrCorrupt, ch, t, off, v.last.at))
		}
	}
	return nil
}

// checkEnd reports a file that does not end with a Footer and the closing
// magic: ErrTruncated at the record the end of the file cuts, or where the
// Footer should be.
func (r *Reader) checkEnd() error {
	if r.hasFooter {
		return nil
	}
	it := recIter{b: r.b[r.dataStart:], base: r.dataStart}
	for {
		rec, ok, trunc := it.next()
		if trunc {
			return r.corrupt(rec.at, fmt.Sprintf("record (opcode 0x%02x) length", uint8(rec.op)),
				fmt.Errorf("%w: the file ends inside this record (no Footer and closing magic)", ErrTruncated))
		}
		if !ok {
			return r.corrupt(int64(len(r.b)), "Footer", fmt.Errorf("%w: the file ends without a Footer and closing magic", ErrTruncated))
		}
	}
}

// checkSummary checks that the summary's ChunkIndex records describe
// Chunk records of the data section and that the SummaryOffset records
// point at groups of the summary.
func (r *Reader) checkSummary() error {
	if !r.hasFooter || r.footer.summaryStart == 0 {
		return nil
	}
	ss, so, end := r.footer.summaryStart, r.footer.summaryOffsetStart, uint64(r.footerAt)
	if ss < uint64(r.dataStart) || ss > end || (so != 0 && (so < ss || so > end)) {
		return r.corrupt(r.footerAt, "Footer.summary_start", fmt.Errorf("%w: summary at %d, offsets at %d, footer at %d", ErrCorrupt, ss, so, end))
	}
	groupsEnd := end
	if so != 0 {
		groupsEnd = so
	}
	it := recIter{b: r.b[ss:groupsEnd], base: int64(ss)}
	for {
		rec, ok, trunc := it.next()
		if trunc {
			return r.corrupt(rec.at, "summary record length", ErrTruncated)
		}
		if !ok {
			break
		}
		if rec.op != OpChunkIndex {
			continue
		}
		if err := r.checkChunkIndex(rec, ss); err != nil {
			return err
		}
	}
	if so == 0 {
		return nil
	}
	it = recIter{b: r.b[so:end], base: int64(so)}
	for {
		rec, ok, trunc := it.next()
		if trunc {
			return r.corrupt(rec.at, "SummaryOffset length", ErrTruncated)
		}
		if !ok {
			return nil
		}
		d := dec{b: rec.body}
		op, start, length := Opcode(d.u8()), d.u64(), d.u64()
		switch {
		case rec.op != OpSummaryOffset:
			return r.corrupt(rec.at, "SummaryOffset", fmt.Errorf("%w: opcode 0x%02x in the summary offset section", ErrCorrupt, uint8(rec.op)))
		case d.bad:
			return r.corrupt(rec.at, "SummaryOffset", ErrTruncated)
		case start < ss || start > so || length > so-start:
			return r.corrupt(rec.at, "SummaryOffset.group_start", fmt.Errorf("%w: group %d+%d outside the summary [%d, %d)", ErrCorrupt, start, length, ss, so))
		case length > 0 && Opcode(r.b[start]) != op:
			return r.corrupt(rec.at, "SummaryOffset.group_opcode", fmt.Errorf("%w: 0x%02x, the group at %d starts with 0x%02x", ErrCorrupt, uint8(op), start, r.b[start]))
		}
	}
}

// checkChunkIndex checks one ChunkIndex record against the Chunk it names.
func (r *Reader) checkChunkIndex(rec record, summaryStart uint64) error {
	d := dec{b: rec.body}
	d.u64() // message_start_time
	d.u64() // message_end_time
	off, length := d.u64(), d.u64()
	var badMI bool
	d.u16u64Map(func(_ uint16, mi uint64) {
		if mi < off+length || mi >= summaryStart {
			badMI = true
		}
	})
	d.u64() // message_index_length
	comp := d.str()
	csize, usize := d.u64(), d.u64()
	if d.bad {
		return r.corrupt(rec.at, "ChunkIndex", ErrTruncated)
	}
	if off < uint64(r.dataStart) || off >= summaryStart || length > summaryStart-off {
		return r.corrupt(rec.at, "ChunkIndex.chunk_start_offset", fmt.Errorf("%w: chunk %d+%d outside the data section [%d, %d)", ErrCorrupt, off, length, r.dataStart, summaryStart))
	}
	it := recIter{b: r.b[off : off+length], base: int64(off)}
	c, ok, _ := it.next()
	if !ok || c.op != OpChunk || recordPrefixLen+uint64(len(c.body)) != length {
		return r.corrupt(rec.at, "ChunkIndex.chunk_start_offset", fmt.Errorf("%w: no Chunk record of %d bytes at %d", ErrCorrupt, length, off))
	}
	cd := dec{b: c.body}
	cd.u64()
	cd.u64()
	cusize := cd.u64()
	cd.u32()
	ccomp := string(cd.bytes32())
	records := cd.bytes64()
	switch {
	case cd.bad:
		return r.corrupt(int64(off), "Chunk", ErrTruncated)
	case ccomp != comp || cusize != usize || uint64(len(records)) != csize:
		return r.corrupt(rec.at, "ChunkIndex", fmt.Errorf("%w: says %q %d bytes from %d, the chunk at %d says %q %d from %d",
			ErrCorrupt, comp, usize, csize, off, ccomp, cusize, len(records)))
	case badMI:
		return r.corrupt(rec.at, "ChunkIndex.message_index_offsets", fmt.Errorf("%w: an offset outside [%d, %d)", ErrCorrupt, off+length, summaryStart))
	}
	return nil
}
