package pack

import (
	"runtime/debug"

	"encoding/binary"
	"fmt"
	"sort"

	"github.com/edr-lite/edr-lite/ingest"
)

// Topic types (FORMAT.md, "Type section"). A type section binds a topic to
// a type (message encoding and schema) for the frames that follow it in
// the file, until the topic's next type section. Each distinct type's body
// (encodings, name, schema bytes) is stored once per file, in the first
// section that uses it; later sections refer to it by its content ID
// (ingest.Type.ID). Older readers skip the sections (an unknown kind).

// Type section forms (the byte after the ID).
const (
	typeRef  = 0 // the type's body is in an earlier type section
	typeBody = 1 // the type's body follows
)

// TopicType is one type section: from the frame after it (Offset), the
// messages of topic Name#Channel have type Type.
type TopicType struct {
	Name, Channel string
	Type          ingest.Type // Schema.Data aliases the file (Reader) or is a copy (StreamReader)
	ID            ingest.ContentID
	// FromNs is the time of the first message the binding applies to, as
	// the writer knew it (the capture time in a dump; 0 when unknown): a
	// type that changed inside a dump says when.
	FromNs int64
	// Offset is the section's file offset.
	Offset int64
}

type topicKey struct{ name, channel string }

// appendTypePayload appends a type section's payload.
func appendTypePayload(dst []byte, name, channel string, fromNs int64, t *ingest.Type, id ingest.ContentID, body bool) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	dst = append(dst, name...)
	dst = binary.AppendUvarint(dst, uint64(len(channel)))
	dst = append(dst, channel...)
	dst = binary.AppendVarint(dst, fromNs)
	dst = append(dst, id[:]...)
	if !body {
		return append(dst, typeRef)
	}
	dst = append(dst, typeBody)
	for _, s := range []string{t.MessageEncoding, t.Schema.Name, t.Schema.Encoding} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return append(dst, t.Schema.Data...)
}

// parseTypePayload decodes a type section's payload (at file offset off,
// of the section's header) and resolves a reference through bodies, to
// which it adds a new body. Every length is bounded by the payload; errors
// name the field and its offset.
func parseTypePayload(path string, off int64, p []byte, bodies map[ingest.ContentID]ingest.Type) (TopicType, error) {
	base := off + SectionHeaderSize
	pos := 0
	bad := func(field, format string, args ...any) (TopicType, error) {
		return TopicType{}, corrupt(path, base+int64(pos), ErrCorrupt, "type section: %s: %s", field, fmt.Sprintf(format, args...))
	}
	str := func(field string) (string, bool) {
		n, k := binary.Uvarint(p[pos:])
		if k <= 0 || n > uint64(len(p)-pos-k) {
			return "", false
		}
		s := string(p[pos+k : pos+k+int(n)])
		pos += k + int(n)
		return s, true
	}
	t := TopicType{Offset: off}
	var ok bool
	if t.Name, ok = str("topic name"); !ok {
		return bad("topic name", "length runs past the section")
	}
	if t.Channel, ok = str("channel"); !ok {
		return bad("channel", "length runs past the section")
	}
	v, k := binary.Varint(p[pos:])
	if k <= 0 {
		return bad("from_ns", "not a varint")
	}
	t.FromNs = v
	pos += k
	if len(p)-pos < len(t.ID)+1 {
		return bad("type id", "section ends inside it")
	}
	copy(t.ID[:], p[pos:])
	pos += len(t.ID)
	form := p[pos]
	pos++
	switch form {
	case typeRef:
		if pos != len(p) {
			return bad("form", "a reference with %d bytes after it", len(p)-pos)
		}
		body, ok := bodies[t.ID]
		if !ok {
			pos -= len(t.ID) + 1
			return bad("type id", "%s refers to a type whose body is not in the file before it", t.ID)
		}
		t.Type = body
		return t, nil
	case typeBody:
	default:
		pos--
		return bad("form", "%d is neither 0 (reference) nor 1 (body)", form)
	}
	bodyAt := pos
	var typ ingest.Type
	for _, f := range []struct {
		name string
		dst  *string
	}{{"message encoding", &typ.MessageEncoding}, {"schema name", &typ.Schema.Name}, {"schema encoding", &typ.Schema.Encoding}} {
		if *f.dst, ok = str(f.name); !ok {
			return bad(f.name, "length runs past the section")
		}
	}
	if pos < len(p) {
		typ.Schema.Data = p[pos:len(p):len(p)]
	}
	if err := typ.Validate(); err != nil {
		pos = bodyAt
		return bad("type", "%v", err)
	}
	if id := typ.ID(); id != t.ID {
		pos = bodyAt - 1 - len(t.ID)
		return bad("type id", "%s, but the body hashes to %s", t.ID, id)
	}
	t.Type = typ
	bodies[t.ID] = typ
	return t, nil
}

// SetTopicType records that the messages of topic name#channel written
// from now on have type t (t.OrRaw: an undeclared type is raw bytes);
// fromNs is the time of the first of them when known (0 otherwise). A
// pending Add frame that holds messages of the topic is written first, so
// the type applies exactly from the next message (a topic's first type
// does not cut the frame). Setting the type the topic already has writes nothing; a
// type already stored for another topic is referred to by its ID, not
// stored again. A type that does not validate (ingest.Type.Validate) is
// refused.
func (w *Writer) SetTopicType(name, channel string, t ingest.Type, fromNs int64) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrClosed
	}
	t = t.OrRaw()
	if err := t.Validate(); err != nil {
		return fmt.Errorf("pack: type of topic %s: %w", Topic(name, channel), err)
	}
	id := t.ID()
	k := topicKey{name, channel}
	if cur, ok := w.types[k]; ok && cur == id {
		return nil
	}
	if w.pendingHasTopic(k) {
		if err := w.writePending(); err != nil {
			return err
		}
	}
	if w.types == nil {
		w.types, w.bodies = map[topicKey]ingest.ContentID{}, map[ingest.ContentID]bool{}
	}
	body := !w.bodies[id]
	payload := appendTypePayload(w.typeBuf[:0], name, channel, fromNs, &t, id, body)
	w.typeBuf = payload[:0]
	if len(payload) > MaxSectionSize {
		return fmt.Errorf("%w: type of topic %s is %d bytes", ErrFrameTooLarge, Topic(name, channel), len(payload))
	}
	if _, err := w.writeSection(SectionType, payload); err != nil {
		return w.fail(err)
	}
	w.types[k], w.bodies[id] = id, true
	return nil
}

// pendingHasTopic reports whether the pending Add frame holds a message of
// topic k, through the index of its topics (extended by the messages added
// since the last call).
func (w *Writer) pendingHasTopic(k topicKey) bool {
	if w.pending == nil {
		return false
	}
	msgs := w.pending.msgs
	if len(msgs) < w.pendingIndexed { // the frame was reset elsewhere
		clear(w.pendingTopics)
		w.pendingIndexed = 0
	}
	if w.pendingTopics == nil {
		w.pendingTopics = map[topicKey]struct{}{}
	}
	for _, m := range msgs[w.pendingIndexed:] {
		w.pendingTopics[topicKey{m.Name, m.Channel}] = struct{}{}
	}
	w.pendingIndexed = len(msgs)
	_, ok := w.pendingTopics[k]
	return ok
}

// HasTopic reports whether f holds a message of topic name#channel.
func (f *Frame) HasTopic(name, channel string) bool {
	for i := range f.msgs {
		if f.msgs[i].Name == name && f.msgs[i].Channel == channel {
			return true
		}
	}
	return false
}

// Types returns the file's type sections in file order (see TopicType),
// found by a walk over the record headers (frames are skipped by their
// length, not read) up to the end of the records or the first damaged
// record. A file written before types existed has none. The result is
// computed once. A type section whose CRC holds but whose content does not
// decode (or refers to a body it does not have) is a *CorruptError naming
// its offset and field.
func (r *Reader) Types() (_ []TopicType, err error) {
	defer r.guard(&err, nil, debug.SetPanicOnFault(true))
	if r.typesDone {
		return r.types, r.typesErr
	}
	r.typesDone = true
	if r.closed {
		return nil, ErrClosed
	}
	bodies := map[ingest.ContentID]ingest.Type{}
	pos := int64(HeaderSize)
	for pos < r.end {
		b := r.data[pos:r.end]
		if len(b) >= 4 && le.Uint32(b) == sectionMagic {
			kind, payload, rec, _, err := parseSection(b)
			if err != nil {
				if r.skipDamaged { // reading the frames counts the region
					pos, _, _, _ = r.resync(pos)
					continue
				}
				break // damage: reading the frames reports it
			}
			if kind == SectionType {
				t, err := parseTypePayload(r.path, pos, payload, bodies)
				switch {
				case err == nil:
					r.types = append(r.types, t)
				case r.skipDamaged: // left out: its topic is untyped from here
					r.skipped.Types++
				default:
					r.typesErr = err
					return r.types, r.typesErr
				}
			}
			pos += rec
			continue
		}
		var h frameHeader
		_, err := parseFrameHeader(b, &h)
		if err == nil && r.skipDamaged && headCRCOf(b[:h.recLen], &h) != h.headCRC {
			err = ErrChecksum // a length not to trust
		}
		if err != nil {
			if r.skipDamaged {
				pos, _, _, _ = r.resync(pos)
				continue
			}
			break
		}
		pos += h.recLen
	}
	return r.types, r.typesErr
}

// Types returns the type sections read so far, in file order: the types of
// every frame read so far are among them. Schema bytes are the
// StreamReader's own copy.
func (s *StreamReader) Types() []TopicType { return s.types }

// TypeIndex answers which type a topic has at a given point of a file,
// from its type sections (Reader.Types, StreamReader.Types). It is not safe
// for concurrent use with Add.
type TypeIndex struct {
	byTopic map[topicKey][]TopicType // each in file order
}

// NewTypeIndex indexes ts (type sections in file order).
func NewTypeIndex(ts []TopicType) *TypeIndex {
	x := &TypeIndex{byTopic: map[topicKey][]TopicType{}}
	for _, t := range ts {
		x.Add(t)
	}
	return x
}

// Add appends a type section found after every one added before.
func (x *TypeIndex) Add(t TopicType) {
	k := topicKey{t.Name, t.Channel}
	x.byTopic[k] = append(x.byTopic[k], t)
}

// At returns the type of topic name#channel for a frame at file offset
// frameOff: the last of its type sections before the frame; nil when there
// is none (an untyped topic, or a file older than types).
func (x *TypeIndex) At(name, channel string, frameOff int64) *TopicType {
	ts := x.byTopic[topicKey{name, channel}]
	i := sort.Search(len(ts), func(i int) bool { return ts[i].Offset >= frameOff })
	if i == 0 {
		return nil
	}
	return &ts[i-1]
}

// Topic returns every type section of topic name#channel, in file order.
func (x *TypeIndex) Topic(name, channel string) []TopicType {
	return x.byTopic[topicKey{name, channel}]
}
