package mcap

import (
	"fmt"
	"hash/crc32"
)

// parseAttachment decodes an Attachment record (fields past the CRC,
// which a later version of the specification may add, are ignored) and
// checks its CRC when it is not 0. Data aliases the record.
func (r *Reader) parseAttachment(rec record) (Attachment, error) {
	d := dec{b: rec.body}
	a := Attachment{LogTime: d.u64(), CreateTime: d.u64(), Name: d.str(), MediaType: d.str(), Offset: rec.at}
	a.Data = d.bytes64()
	covered := len(rec.body) - len(d.b)
	crc := d.u32()
	if d.bad {
		return Attachment{}, r.corrupt(rec.at, "Attachment", fmt.Errorf("%w: the record's %d bytes end inside its fields", ErrTruncated, len(rec.body)))
	}
	if crc != 0 {
		if got := crc32.ChecksumIEEE(rec.body[:covered]); got != crc {
			return Attachment{}, r.corrupt(rec.at, "Attachment.crc", fmt.Errorf("%w: attachment %q: computed 0x%08x, stored 0x%08x", ErrCRC, a.Name, got, crc))
		}
	}
	return a, nil
}

// Attachments returns the file's Attachment records in file order, each
// checked (fields, CRC): found by walking the records of the data section
// (chunks are skipped by their length, never decompressed), so files
// without a summary or attachment index give theirs too. Data aliases the
// Reader's bytes: valid until Close. An attachment that does not check out
// is an error naming its offset (the ones before it are returned); a file
// cut short gives those before the cut. What is kept is bounded as the
// other records a walk keeps (ReaderOptions.MaxChunkSize).
func (r *Reader) Attachments() ([]Attachment, error) {
	end := int64(len(r.b))
	if r.hasFooter {
		end = r.footerAt
	}
	var out []Attachment
	var kept uint64
	it := recIter{b: r.b[r.dataStart:end], base: r.dataStart}
	for {
		rec, ok, _ := it.next()
		if !ok {
			return out, nil
		}
		switch rec.op {
		case OpDataEnd, OpFooter:
			return out, nil
		case OpAttachment:
			a, err := r.parseAttachment(rec)
			if err != nil {
				return out, err
			}
			if err := r.retain(&kept, len(a.Name)+len(a.MediaType), rec.at, "Attachment"); err != nil {
				return out, err
			}
			out = append(out, a)
		}
	}
}

// Attachments returns the attachments of the file behind p
// (Reader.Attachments).
func (p *PackReader) Attachments() ([]Attachment, error) { return p.r.Attachments() }
