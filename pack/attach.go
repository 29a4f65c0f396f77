package pack

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Attachments (FORMAT.md, "Attachment section"): files stored beside the
// messages of a dump — a calibration, a map, the configuration a recorder
// ran with, an MCAP file's Attachment records — each a section of kind
// SectionAttachment with a name, a media type, two times and the bytes.
// Readers before the kind skip the sections (an unknown kind).

// Attachment is one attachment section.
type Attachment struct {
	Name      string // e.g. "calibration.yaml"; need not be unique
	MediaType string // e.g. "application/yaml"; "" when unknown
	// LogNs is the time the attachment belongs to (MCAP log_time), CreateNs
	// when it was made (MCAP create_time); ns since the UNIX epoch, 0 when
	// unknown.
	LogNs, CreateNs int64
	// Data is the attachment's bytes: it aliases the file's mapping
	// (Reader), valid until Close; nil from a StreamReader, which keeps
	// only Size.
	Data []byte
	Size int64 // len(Data)
	// Offset is the section's file offset (0 for one not yet written).
	Offset int64
}

// MaxAttachmentName bounds an attachment's name and media type.
const MaxAttachmentName = 4096

// attachmentCost is what one attachment is charged beyond its name and
// media type against the reader's memory limit (the Attachment, its slot,
// and what a program listing it makes of it: a row, a line of JSON): a
// file of tiny attachment sections cannot make a list of many times its
// size. The MCAP reader charges the same.
const attachmentCost = 1 << 10

// appendAttachmentHead appends an attachment section's payload up to its
// data, which follows to the end of the payload.
func appendAttachmentHead(dst []byte, a *Attachment) []byte {
	dst = binary.AppendVarint(dst, a.LogNs)
	dst = binary.AppendVarint(dst, a.CreateNs)
	dst = binary.AppendUvarint(dst, uint64(len(a.Name)))
	dst = append(dst, a.Name...)
	dst = binary.AppendUvarint(dst, uint64(len(a.MediaType)))
	return append(dst, a.MediaType...)
}

// parseAttachmentPayload decodes an attachment section's payload (the
// section at file offset off). Every length is bounded by the payload and
// by MaxAttachmentName; Data aliases p. Errors name the field and its
// offset.
func parseAttachmentPayload(path string, off int64, p []byte) (Attachment, error) {
	base := off + SectionHeaderSize
	pos := 0
	bad := func(field, format string, args ...any) (Attachment, error) {
		return Attachment{}, corrupt(path, base+int64(pos), ErrCorrupt, "attachment section: %s: %s", field, fmt.Sprintf(format, args...))
	}
	a := Attachment{Offset: off}
	var k int
	if a.LogNs, k = binary.Varint(p[pos:]); k <= 0 {
		return bad("log_ns", "not a varint")
	}
	pos += k
	if a.CreateNs, k = binary.Varint(p[pos:]); k <= 0 {
		return bad("create_ns", "not a varint")
	}
	pos += k
	for _, f := range []struct {
		name string
		dst  *string
	}{{"name", &a.Name}, {"media type", &a.MediaType}} {
		n, k := binary.Uvarint(p[pos:])
		if k <= 0 || n > uint64(len(p)-pos-k) {
			return bad(f.name, "length runs past the section")
		}
		if n > MaxAttachmentName {
			return bad(f.name, "%d bytes, over %d", n, MaxAttachmentName)
		}
		*f.dst = string(p[pos+k : pos+k+int(n)])
		pos += k + int(n)
	}
	a.Data = p[pos:len(p):len(p)]
	a.Size = int64(len(a.Data))
	return a, nil
}

// AddAttachment stores an attachment in the file, written at once as an
// attachment section (its bytes are not kept; a pending Add frame is not
// written first: attachments are not bound to frames). Name and media type
// are at most MaxAttachmentName bytes, the whole section at most
// MaxSectionSize.
func (w *Writer) AddAttachment(a Attachment) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrClosed
	}
	if w.held.ok {
		return errors.New("pack: AddAttachment with a provisional frame neither kept nor taken back")
	}
	if len(a.Name) > MaxAttachmentName || len(a.MediaType) > MaxAttachmentName {
		return fmt.Errorf("pack: attachment %.64q: name or media type over %d bytes", a.Name, MaxAttachmentName)
	}
	head := appendAttachmentHead(nil, &a)
	if int64(len(head))+int64(len(a.Data)) > MaxSectionSize {
		return fmt.Errorf("%w: attachment %q is %d bytes", ErrFrameTooLarge, a.Name, len(a.Data))
	}
	n := SectionHeaderSize + len(head) + len(a.Data)
	dst, err := w.sink.reserve(n)
	if err != nil {
		return w.fail(err)
	}
	copy(dst[SectionHeaderSize:], head)
	copy(dst[SectionHeaderSize+len(head):], a.Data)
	putSectionHeader(dst, SectionAttachment, dst[SectionHeaderSize:n])
	if err := w.sink.commit(n); err != nil {
		return w.fail(err)
	}
	w.off += int64(n)
	return nil
}

// Attachments returns the file's attachment sections in file order, found
// by walking the record headers (frames are skipped by their length). Data
// aliases the mapping: valid until Close. A section that does not decode
// is an error naming its offset (the attachments before it are returned);
// damage that stops the walk is reported by reading the frames.
func (r *Reader) Attachments() ([]Attachment, error) {
	if r.closed {
		return nil, ErrClosed
	}
	var out []Attachment
	var kept int64 // what the list holds, bounded as a frame's decoding is
	pos := int64(HeaderSize)
	for pos < r.end {
		b := r.data[pos:r.end]
		if len(b) >= 4 && le.Uint32(b) == sectionMagic {
			kind, payload, rec, _, err := parseSection(b)
			if err != nil {
				break
			}
			if kind == SectionAttachment {
				a, err := parseAttachmentPayload(r.path, pos, payload)
				if err != nil {
					return out, err
				}
				if kept += attachmentCost + int64(len(a.Name)+len(a.MediaType)); kept > r.limit() {
					return out, corrupt(r.path, pos, ErrMemoryLimit, "%d attachment sections before this one: their list needs more than the reader's limit of %d MiB (offline tools: --max-memory)", len(out), r.limit()>>20)
				}
				out = append(out, a)
			}
			pos += rec
			continue
		}
		var h frameHeader
		if _, err := parseFrameHeader(b, &h); err != nil {
			break
		}
		pos += h.recLen
	}
	return out, nil
}

// Attachments returns the attachment sections read so far, in file order,
// without their bytes (Data nil; Size says how many).
func (s *StreamReader) Attachments() []Attachment { return s.attachments }
