package mcap

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/schema"
)

// Metadata record names written for a dump's self-description.
const (
	// MetadataTrigger: one record per trigger (reason, time_ns, source,
	// rule, tag, severity, from_ns, to_ns, pre_ns and post_ns when set, id, and
	// param.<key> entries).
	MetadataTrigger = "edr.trigger"
	// MetadataTopicStats: one record per topic (topic, type, messages,
	// bytes, overwritten, oversize, skipped_busy, lost_at_source, first_ns,
	// last_ns).
	MetadataTopicStats = "edr.topic_stats"
	// MetadataDump: the dump's window and origin (writer, host, start_ns,
	// end_ns, created_ns, label.<key>) and, under "json", the whole
	// dumpinfo.Info as pack stores it, so a round trip loses nothing.
	MetadataDump = "edr.dump_info"
	// MetaChannelSuffix is appended to a topic for the channel that carries
	// the meta bytes of messages that have both meta and a data block.
	MetaChannelSuffix = "/meta"
	// MetaEncoding is the message encoding of such meta channels: the
	// serialized message bytes of the pack entry (usually protobuf, schema
	// unknown to edr-lite).
	MetaEncoding = "x-edr-pack-meta"
)

type topicKey struct{ name, channel string }

type typedKey struct {
	topicKey
	id   ingest.ContentID
	kept bool
}

// topicState is a topic's current channel: one per (topic, type, kept). A
// topic whose type changes gets a new channel, as does one whose messages
// start or stop carrying their producers' sequence numbers (kept);
// sequence numbers and the meta channel carry over.
type topicState struct {
	id, metaID uint16
	hasMeta    bool
	seq        uint32
	kept       bool           // the channel's sequences are the producers' (MetadataSequence)
	typ        ingest.Type    // the type declared (what a PackReader gives back)
	layout     *schema.Layout // transcoding x-edr-packed to json when not nil
	rawID      int            // the untranscoded channel, -1 until needed
	topic      Topic
}

// MetadataLayout is the channel metadata key holding the layout of a
// packed-struct topic transcoded to json, so a PackReader gives the topic
// back as the packed struct it was (docs/mcap.md).
const MetadataLayout = "edr.layout"

// MetadataSequence is the channel metadata key of a channel whose
// messages carry their producers' sequence numbers (value
// SequenceProducer): PackWriter writes it on the channels of messages
// added with their sequence (AddSeq), and a PackReader gives those back
// with the message (PackMessage.HasSeq). A channel of edr-lite's without
// it was numbered by the writer (each topic from 0): the producer's
// numbers are unknown. Channels of other writers carry their own.
const (
	MetadataSequence = "edr.sequence"
	SequenceProducer = "producer"
)

// PackWriter writes pack-model messages (name, channel, meta, gen_ts,
// done_ts, data) as MCAP. It has the same Add, WriteFrame, AddMetadata,
// SetDumpInfo, Flush, Offset and Close methods as pack.Writer, so the
// recorder can write either format through one interface, and ExportPack
// uses it to convert pack files.
//
// Mapping of one pack message to MCAP messages:
//   - the MCAP message on topic TopicName(name, channel) carries the data
//     block when the message has one, else its meta bytes;
//   - a message with both meta and data also gets a message with the meta
//     bytes on topic+MetaChannelSuffix (encoding MetaEncoding), same times;
//   - log_time is done_ts (capture time), else gen_ts; publish_time is gen_ts,
//     else log_time (negative times become 0);
//   - sequence is the message's own sequence number when it has one
//     (AddSeq, a pack message's Seq: the producer's, kept; modulo 2^32),
//     else the topic's count so far (from 0, or from one past the last
//     sequence given).
//
// Types: a topic's channel has its type's message encoding and Schema
// (Writer.AddTopic). A packed-struct topic (x-edr-packed) is transcoded to
// message encoding json with the layout's JSON Schema (schema.Layout
// AppendJSON, JSONSchema), its layout kept in the channel metadata
// (MetadataLayout), unless Options.KeepPacked; a message too short for its
// layout goes, as it is, on a second channel of the same topic with the
// packed type. A topic whose type changes (DeclareTopic again) continues on
// a new channel of the same MCAP topic.
//
// Channels are created on a topic's first message (or by DeclareTopic,
// which gives the type). A PackWriter is not safe for concurrent use.
type PackWriter struct {
	w          *Writer
	fw         *FileWriter // nil when writing to an io.Writer
	topics     map[topicKey]*topicState
	types      map[topicKey]Topic
	byType     map[typedKey]*topicState // every channel made, to go back to one
	info       *dumpinfo.Info
	msg        Message
	scratch    []byte
	held       []byte // reserved data moved aside (Add)
	keepPacked bool
	closed     bool
	notes      []string // types it could not transcode (Notes)
}

// NewPackWriter writes MCAP to w; Close does not close w.
func NewPackWriter(w io.Writer, opt Options) (*PackWriter, error) {
	mw, err := NewWriter(w, opt)
	if err != nil {
		return nil, err
	}
	return &PackWriter{w: mw, topics: map[topicKey]*topicState{}, types: map[topicKey]Topic{}, keepPacked: opt.KeepPacked}, nil
}

// CreatePackWriter writes an MCAP dump file at path through the mmap
// FileWriter (path.tmp, renamed by Close).
func CreatePackWriter(path string, opt FileOptions) (*PackWriter, error) {
	fw, err := Create(path, opt)
	if err != nil {
		return nil, err
	}
	return &PackWriter{w: fw.Writer, fw: fw, topics: map[topicKey]*topicState{}, types: map[topicKey]Topic{},
		keepPacked: opt.KeepPacked}, nil
}

// maxNotes bounds the notes a PackWriter keeps (one per topic and type).
const maxNotes = 256

// Notes says what the writer could not do as asked: packed-struct topics
// whose layout does not compile, written as they are instead of transcoded
// (each naming the topic, its type and the cause).
func (p *PackWriter) Notes() []string { return p.notes }

// Reserve returns n bytes where the data of the next Add can be written
// in place (Writer.Reserve): an Add whose data is that slice does not copy
// it, unless its topic needs a new channel first (then Add copies it
// aside). Valid until the next call on the PackWriter; DeclareTopic may
// reuse the bytes.
func (p *PackWriter) Reserve(n int) []byte { return p.w.Reserve(n) }

// Writer returns the underlying MCAP writer (for AddMetadata and the like).
func (p *PackWriter) Writer() *Writer { return p.w }

// DeclareTopic gives a topic's type (t.Name and t.Channel identify it;
// t.Metadata goes into its channel's metadata). Before the topic's first
// message it sets the type its channel is created with; after, a type that
// differs from the current one starts a new channel for the messages added
// from now on (a producer that restarted with another schema), the same
// type changes nothing.
func (p *PackWriter) DeclareTopic(t Topic) error {
	k := topicKey{t.Name, t.Channel}
	cur, ok := p.topics[k]
	if !ok {
		p.types[k] = t
		return nil
	}
	if cur.typ.Equal(t.Type.OrRaw()) {
		return nil
	}
	return p.switchChannel(cur, t, cur.kept)
}

// switchChannel moves topic t from its channel cur to the one of its type
// and kept (made now unless it had one before), carrying over the
// sequence count and the meta channel.
func (p *PackWriter) switchChannel(cur *topicState, t Topic, kept bool) error {
	k := topicKey{t.Name, t.Channel}
	ts, ok := p.byType[typedKey{k, t.Type.OrRaw().ID(), kept}]
	if !ok { // a channel this topic had before is taken up again
		var err error
		if ts, err = p.newChannel(t, kept); err != nil {
			return err
		}
	}
	ts.seq, ts.metaID, ts.hasMeta = cur.seq, cur.metaID, cur.hasMeta
	p.topics[k] = ts
	return nil
}

// topic returns the topic's channel for messages with (kept) or without
// their producers' sequence numbers, making it for the topic's first
// message or when that changes.
func (p *PackWriter) topic(name, channel string, kept bool) (*topicState, error) {
	if ts, ok := p.topics[topicKey{name, channel}]; ok {
		if ts.kept != kept {
			if err := p.switchChannel(ts, ts.topic, kept); err != nil {
				return nil, err
			}
			ts = p.topics[topicKey{name, channel}]
		}
		return ts, nil
	}
	t, ok := p.types[topicKey{name, channel}]
	if !ok {
		t = Topic{Name: name, Channel: channel}
	}
	ts, err := p.newChannel(t, kept)
	if err != nil {
		return nil, err
	}
	p.topics[topicKey{name, channel}] = ts
	return ts, nil
}

// withSequence returns md with MetadataSequence added (a copy) when kept.
func withSequence(md map[string]string, kept bool) map[string]string {
	if !kept {
		return md
	}
	md = maps.Clone(md)
	if md == nil {
		md = map[string]string{}
	}
	md[MetadataSequence] = SequenceProducer
	return md
}

// newChannel adds the channel of topic t, transcoding a packed type; kept:
// its messages carry their producers' sequence numbers.
func (p *PackWriter) newChannel(t Topic, kept bool) (*topicState, error) {
	ts := &topicState{typ: t.Type.OrRaw(), rawID: -1, topic: t, kept: kept}
	ct := t
	ct.Metadata = withSequence(t.Metadata, kept)
	if ts.typ.MessageEncoding == ingest.EncodingPacked && !p.keepPacked {
		// A layout that does not compile is written as it is, and said.
		js, l, err := schema.AsJSON(ts.typ)
		if err != nil && len(p.notes) < maxNotes {
			p.notes = append(p.notes, fmt.Sprintf("topic %s: type %s not transcoded to json, written as %s: %v",
				TopicName(t.Name, t.Channel), ts.typ.Schema.Name, ingest.EncodingPacked, err))
		}
		if err == nil {
			ts.layout = l
			ct.Type = js
			ct.Metadata = maps.Clone(ct.Metadata)
			if ct.Metadata == nil {
				ct.Metadata = map[string]string{}
			}
			ct.Metadata[MetadataLayout] = string(ts.typ.Schema.Data)
		}
	}
	id, err := p.w.AddTopic(ct)
	if err != nil {
		return nil, err
	}
	ts.id = id
	if p.byType == nil {
		p.byType = map[typedKey]*topicState{}
	}
	p.byType[typedKey{topicKey{t.Name, t.Channel}, ts.typ.ID(), kept}] = ts
	return ts, nil
}

// rawChannel returns the channel for messages of a transcoded topic that
// cannot be transcoded (too short for the layout): the packed type as it
// is, on the same MCAP topic.
func (p *PackWriter) rawChannel(ts *topicState) (uint16, error) {
	if ts.rawID < 0 {
		t := ts.topic
		t.Type = ts.typ
		t.Metadata = withSequence(t.Metadata, ts.kept)
		id, err := p.w.AddTopic(t)
		if err != nil {
			return 0, err
		}
		ts.rawID = int(id)
	}
	return uint16(ts.rawID), nil
}

func nonNegative(ns int64) uint64 { return uint64(max(ns, 0)) }

// Add writes one pack message (see the mapping in the type's doc). meta and
// data are copied. It allocates only when a topic is seen for the first
// time (and, for a transcoded topic, while its JSON buffer grows).
func (p *PackWriter) Add(name, channel string, meta []byte, genTs, doneTs int64, data []byte) error {
	return p.add(name, channel, meta, genTs, doneTs, data, false, 0, false)
}

// AddSeq is Add of a message with its producer's sequence number, written
// as the MCAP sequence (modulo 2^32: MCAP's is 32 bits).
func (p *PackWriter) AddSeq(name, channel string, meta []byte, genTs, doneTs int64, seq uint64, data []byte) error {
	return p.add(name, channel, meta, genTs, doneTs, data, false, seq, true)
}

// Borrows reports whether AddBorrowed borrows the data of the topic's next
// message (Writer.CanBorrow, and the topic is not transcoded); the topic's
// channel is created now if it was not (as its first Add would).
func (p *PackWriter) Borrows(name, channel string) (bool, error) {
	if !p.w.CanBorrow() {
		return false, nil
	}
	ts, err := p.topic(name, channel, false)
	if err != nil {
		return false, err
	}
	return ts.layout == nil, nil
}

// AddBorrowed is Add of a message without meta whose data the open chunk
// borrows, when Borrows says so (Writer.WriteMessageBorrowed: the caller
// closes the chunk once Writer.ChunkFull and checks the data); otherwise
// the data is copied.
func (p *PackWriter) AddBorrowed(name, channel string, genTs, doneTs int64, data []byte) error {
	return p.add(name, channel, nil, genTs, doneTs, data, true, 0, false)
}

func (p *PackWriter) add(name, channel string, meta []byte, genTs, doneTs int64, data []byte, borrow bool, seq uint64, hasSeq bool) error {
	if p.w.reserved(data) {
		if ts, ok := p.topics[topicKey{name, channel}]; !ok || ts.layout != nil || ts.kept != hasSeq {
			// a new channel (or a raw one for a packed message that does
			// not transcode) would be appended over the reserved data
			p.held = append(p.held[:0], data...)
			data = p.held
		}
	}
	ts, err := p.topic(name, channel, hasSeq)
	if err != nil {
		return err
	}
	logTime := doneTs
	if logTime == 0 {
		logTime = genTs
	}
	pub := genTs
	if pub == 0 {
		pub = logTime
	}
	if hasSeq {
		ts.seq = uint32(seq)
	}
	m := &p.msg
	m.ChannelID, m.Sequence = ts.id, ts.seq
	m.LogTime, m.PublishTime = nonNegative(logTime), nonNegative(pub)
	m.Data = data
	if data == nil {
		m.Data = meta
	}
	if ts.layout != nil {
		js, err := ts.layout.AppendJSON(p.scratch[:0], m.Data)
		if err == nil && data != nil {
			p.scratch, m.Data = js, js
		} else if m.ChannelID, err = p.rawChannel(ts); err != nil {
			return err
		}
	}
	ts.seq++
	if borrow && ts.layout == nil {
		err = p.w.WriteMessageBorrowed(m)
	} else {
		err = p.w.WriteMessage(m)
	}
	if err != nil {
		return err
	}
	if data != nil && len(meta) > 0 {
		if !ts.hasMeta {
			id, err := p.w.AddChannel(0, TopicName(name, channel)+MetaChannelSuffix, MetaEncoding,
				map[string]string{"edr.name": name, "edr.channel": channel, "edr.part": "meta"})
			if err != nil {
				return err
			}
			ts.metaID, ts.hasMeta = id, true
		}
		m.ChannelID, m.Data = ts.metaID, meta
		if err := p.w.WriteMessage(m); err != nil {
			return err
		}
	}
	m.Data = nil
	return nil
}

// WriteFrame writes every message of f (see Add; a message without gen_ts
// and done_ts takes the frame time).
func (p *PackWriter) WriteFrame(f *pack.Frame) error {
	for i := range f.Len() {
		m := f.Message(i)
		doneTs := m.DoneTs
		if doneTs == 0 && m.GenTs == 0 {
			doneTs = f.Time()
		}
		if err := p.add(m.Name, m.Channel, m.Meta, m.GenTs, doneTs, f.Data(i), false, m.Seq, m.HasSeq); err != nil {
			return err
		}
	}
	return nil
}

// AddMetadata writes a pack-style metadata section (a name and opaque
// bytes) as Metadata records: MCAP records a PackReader made into a
// section (MetadataRecords) are written as they were, one record or
// several of that name; any other bytes as one record with the bytes
// base64-encoded under "base64".
func (p *PackWriter) AddMetadata(name string, data []byte) error {
	if recs, ok := MetadataRecords(data); ok {
		for _, kv := range recs {
			if err := p.w.AddMetadata(name, kv); err != nil {
				return err
			}
		}
		return nil
	}
	return p.w.AddMetadata(name, map[string]string{"base64": base64.StdEncoding.EncodeToString(data)})
}

// MetadataRecords reads a pack metadata section as the MCAP Metadata
// records it holds, when it is what PackReader.Sections makes of them: the
// canonical JSON (as encoding/json writes it: keys sorted, no spaces) of
// one record's key/value pairs, or of a non-empty array of them (a name
// several records share). ok is false for any other bytes.
func MetadataRecords(data []byte) (recs []map[string]string, ok bool) {
	switch {
	case len(data) > 1 && data[0] == '{':
		var kv map[string]string
		if json.Unmarshal(data, &kv) != nil || kv == nil {
			return nil, false
		}
		recs = []map[string]string{kv}
	case len(data) > 2 && data[0] == '[':
		if json.Unmarshal(data, &recs) != nil || len(recs) < 2 {
			return nil, false
		}
		for _, kv := range recs {
			if kv == nil { // null in the array
				return nil, false
			}
		}
	default:
		return nil, false
	}
	if again, err := metadataSection(recs); err != nil || !bytes.Equal(again, data) {
		return nil, false
	}
	return recs, true
}

// metadataSection is the pack metadata section of MCAP records of one name
// (MetadataRecords reads it back).
func metadataSection(recs []map[string]string) ([]byte, error) {
	if len(recs) == 1 {
		return json.Marshal(recs[0])
	}
	return json.Marshal(recs)
}

// AddAttachment writes a pack attachment as an MCAP Attachment record
// (times before 1970 become 0).
func (p *PackWriter) AddAttachment(a pack.Attachment) error {
	return p.w.AddAttachment(&Attachment{LogTime: nonNegative(a.LogNs), CreateTime: nonNegative(a.CreateNs),
		Name: a.Name, MediaType: a.MediaType, Data: a.Data})
}

// PackAttachment is an MCAP attachment as a pack attachment (times past
// the year 2262 become the largest).
func PackAttachment(a *Attachment) pack.Attachment {
	return pack.Attachment{Name: a.Name, MediaType: a.MediaType, LogNs: clampNs(a.LogTime), CreateNs: clampNs(a.CreateTime),
		Data: a.Data, Size: int64(len(a.Data))}
}

// Flush writes the open chunk.
func (p *PackWriter) Flush() error { return p.w.Flush() }

// Offset returns the bytes written so far.
func (p *PackWriter) Offset() int64 { return p.w.Written() }

// SetDumpInfo records the dump's triggers and per-topic accounting; Close
// writes them as Metadata records (MetadataTrigger, MetadataTopicStats,
// MetadataDump). A later call replaces an earlier one.
func (p *PackWriter) SetDumpInfo(d dumpinfo.Info) error {
	p.info = &d
	return nil
}

// Close writes the dump information and finishes the file.
func (p *PackWriter) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	var err error
	if p.info != nil {
		err = WriteDumpInfo(p.w, *p.info)
	}
	if p.fw != nil {
		if err != nil {
			return errors.Join(err, p.fw.Abort())
		}
		return p.fw.Close()
	}
	if err != nil {
		return err
	}
	return p.w.Close()
}

// Abort stops writing; a file being written is removed.
func (p *PackWriter) Abort() error {
	p.closed = true
	if p.fw != nil {
		return p.fw.Abort()
	}
	return nil
}

// WriteDumpInfo writes d as Metadata records: one MetadataTrigger per
// trigger, one MetadataTopicStats per topic and one MetadataDump.
func WriteDumpInfo(w *Writer, d dumpinfo.Info) error {
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	u64 := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, t := range d.Triggers {
		kv := map[string]string{"id": u64(t.ID), "reason": t.Reason, "time_ns": i64(t.TimeNs), "severity": strconv.Itoa(t.Severity)}
		// the effective window; pre_ns / post_ns only for overrides
		if t.FromNs != 0 || t.ToNs != 0 { // as recorded (dumpinfo.Decode derives it for older dumps)
			kv["from_ns"], kv["to_ns"] = i64(t.FromNs), i64(t.ToNs)
		}
		if v, ok := t.Pre(); ok {
			kv["pre_ns"] = i64(v)
		}
		if v, ok := t.Post(); ok {
			kv["post_ns"] = i64(v)
		}
		for k, v := range map[string]string{"source": t.Source, "rule": t.Rule, "tag": t.Tag} {
			if v != "" {
				kv[k] = v
			}
		}
		for k, v := range t.Params {
			kv["param."+k] = v
		}
		if err := w.AddMetadata(MetadataTrigger, kv); err != nil {
			return err
		}
	}
	for _, a := range d.Topics {
		kv := map[string]string{"topic": displayTopic(a.Topic), "messages": u64(a.Messages), "bytes": u64(a.Bytes),
			"overwritten": u64(a.Overwritten), "oversize": u64(a.Oversize), "skipped_busy": u64(a.SkippedBusy), "lost_at_source": u64(a.LostAtSource),
			"first_ns": i64(a.FirstNs), "last_ns": i64(a.LastNs)}
		if a.Type != "" {
			kv["type"] = a.Type
		}
		if a.Cut != 0 {
			kv["cut"] = u64(a.Cut)
		}
		if err := w.AddMetadata(MetadataTopicStats, kv); err != nil {
			return err
		}
	}
	js, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("mcap: dump info: %w", err)
	}
	kv := map[string]string{"json": string(js), "writer": d.Writer, "host": d.Host,
		"start_ns": i64(d.StartNs), "end_ns": i64(d.EndNs), "created_ns": i64(d.CreatedNs)}
	for k, v := range d.Labels {
		kv["label."+k] = v
	}
	if c := d.Cut; c != nil { // readable without parsing "json"
		kv["cut.of"] = strings.Join(c.Of, ",")
		kv["cut.from_ns"], kv["cut.to_ns"] = i64(c.FromNs), i64(c.ToNs)
	}
	return w.AddMetadata(MetadataDump, kv)
}

// displayTopic renders a pack topic "name#channel" as the MCAP topic.
func displayTopic(t string) string {
	name, ch := pack.SplitTopic(t)
	return TopicName(name, ch)
}

// ExportOptions configure ExportPack.
type ExportOptions struct {
	Options
	// Topics gives type information per topic (Name and Channel identify
	// it), winning over what the file says.
	Topics []Topic
	// Stamp are Metadata records the output gets instead of the input's
	// of the same names (a provenance: seal.go); the input's seal is
	// never copied.
	Stamp map[string]map[string]string
}

// ExportStats reports what ExportPack wrote.
type ExportStats struct {
	Frames   int
	Messages uint64 // pack messages read (an entry with meta and data counts once)
	Bytes    uint64 // data and meta bytes carried
	Written  int64  // MCAP bytes written
	// Attachments is the attachments carried (pack attachment sections,
	// MCAP Attachment records).
	Attachments int
	// Notes are PackWriter.Notes: topics not transcoded, and why.
	Notes []string
}

// ExportPack converts the pack file behind r to MCAP on w, frames in file
// order, with the dump information (triggers, per-topic accounting) as
// Metadata records, the pack file's other metadata sections as Metadata
// named after them (PackWriter.AddMetadata), its attachments as Attachment
// records and its header as MetadataPackHeader. Each topic's type comes from the file's type
// sections (pack.Reader.Types), applied from the frame after each, so a
// type that changed inside the dump starts a new channel there; a file
// without them (format 1.0) gives each topic the type name of its dump
// information's accounting, as opaque bytes. It reads r from its current
// position (a new Reader starts at the first frame).
func ExportPack(r *pack.Reader, w io.Writer, opts ExportOptions) (ExportStats, error) {
	var st ExportStats
	types, err := r.Types()
	if err != nil {
		return st, fmt.Errorf("mcap: export %s: %w", r.Path(), err)
	}
	pw, err := NewPackWriter(w, opts.Options)
	if err != nil {
		return st, err
	}
	di, hasInfo := r.DumpInfo()
	if hasInfo && len(types) == 0 {
		for _, a := range di.Topics {
			if a.Type != "" {
				name, ch := pack.SplitTopic(a.Topic)
				pw.DeclareTopic(Topic{Name: name, Channel: ch, Type: ingest.Raw(a.Type)})
			}
		}
	}
	fixed := map[topicKey]bool{}
	for _, t := range opts.Topics {
		if err := pw.DeclareTopic(t); err != nil {
			return st, err
		}
		fixed[topicKey{t.Name, t.Channel}] = true
	}
	var f pack.Frame
	next := 0 // the next type section to apply
	for {
		err := r.ReadInto(&f)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("mcap: export %s: %w", r.Path(), err)
		}
		for ; next < len(types) && types[next].Offset < r.FrameOffset(); next++ {
			tt := &types[next]
			if !fixed[topicKey{tt.Name, tt.Channel}] {
				if err := pw.DeclareTopic(Topic{Name: tt.Name, Channel: tt.Channel, Type: tt.Type}); err != nil {
					return st, err
				}
			}
		}
		st.Frames++
		if err := pw.WriteFrame(&f); err != nil {
			return st, err
		}
		for i := range f.Len() {
			st.Messages++
			st.Bytes += uint64(len(f.Message(i).Meta) + len(f.Data(i)))
		}
	}
	for _, name := range r.MetadataNames() {
		if name == dumpinfo.MetadataName || opts.stamped(name) {
			continue
		}
		b, _ := r.Metadata(name)
		if err := pw.AddMetadata(name, b); err != nil {
			return st, err
		}
	}
	if err := opts.addStamp(pw.w); err != nil {
		return st, err
	}
	atts, err := r.Attachments()
	if err != nil {
		return st, fmt.Errorf("mcap: export %s: %w", r.Path(), err)
	}
	for _, a := range atts {
		if err := pw.AddAttachment(a); err != nil {
			return st, err
		}
	}
	st.Attachments = len(atts)
	h := r.Header()
	if err := pw.w.AddMetadata(MetadataPackHeader, map[string]string{"writer": h.Writer,
		"created_ns": strconv.FormatInt(h.CreatedNs, 10)}); err != nil {
		return st, err
	}
	return st, pw.finish(&st, di, hasInfo)
}

// finish writes the dump information (when there is one) and closes the
// file, recording the bytes written in st.
func (p *PackWriter) finish(st *ExportStats, d dumpinfo.Info, hasInfo bool) error {
	if hasInfo {
		_ = p.SetDumpInfo(d)
	}
	st.Notes = p.notes
	if err := p.Close(); err != nil {
		return err
	}
	st.Written = p.w.Written()
	return nil
}

// ExportMCAP converts the MCAP file behind p to a new MCAP file on w, as
// ExportPack converts a pack file: the pack messages in file order through
// a PackWriter (so a file of another writer gets edr-lite's channels, each
// keeping its message encoding, schema and channel metadata; a topic with
// several types keeps them, each from its first message), the dump
// information, every attachment and every other Metadata record as it
// was. Every message
// keeps its producer's sequence number (PackMessage.HasSeq; the others are
// numbered again, as they were); times are mapped as PackWriter maps them.
func ExportMCAP(p *PackReader, w io.Writer, opts ExportOptions) (ExportStats, error) {
	var st ExportStats
	pw, err := NewPackWriter(w, opts.Options)
	if err != nil {
		return st, err
	}
	fixed := map[topicKey]bool{}
	for _, t := range opts.Topics {
		if err := pw.DeclareTopic(t); err != nil {
			return st, err
		}
		fixed[topicKey{t.Name, t.Channel}] = true
	}
	cur := map[topicKey]*ingest.Type{}
	p.FileOrder()
	for {
		ok, err := p.Next()
		if err != nil {
			return st, fmt.Errorf("mcap: export %s: %w", p.r.name, err)
		}
		if !ok {
			break
		}
		m := p.Message()
		if k := (topicKey{m.Name, m.Channel}); m.Type != nil && cur[k] != m.Type && !fixed[k] {
			cur[k] = m.Type
			if err := pw.DeclareTopic(Topic{Name: m.Name, Channel: m.Channel, Type: *m.Type, Metadata: foreignMetadata(m.chanInfo)}); err != nil {
				return st, err
			}
		}
		if err := pw.add(m.Name, m.Channel, m.Meta, m.GenTs, m.DoneTs, m.Data, false, m.Seq, m.HasSeq); err != nil {
			return st, err
		}
		st.Messages++
		st.Bytes += uint64(len(m.Meta) + len(m.Data))
	}
	atts, err := p.Attachments()
	if err != nil {
		return st, fmt.Errorf("mcap: export %s: %w", p.r.name, err)
	}
	for i := range atts {
		if err := pw.w.AddAttachment(&atts[i]); err != nil {
			return st, err
		}
	}
	st.Attachments = len(atts)
	info, hasInfo := p.DumpInfo()
	for _, md := range p.Info().Metadata {
		switch md.Name {
		case MetadataDump, MetadataTrigger, MetadataTopicStats:
			if hasInfo {
				continue // written again from info
			}
		}
		if opts.stamped(md.Name) {
			continue
		}
		if err := pw.w.AddMetadata(md.Name, md.KV); err != nil {
			return st, err
		}
	}
	if err := opts.addStamp(pw.w); err != nil {
		return st, err
	}
	return st, pw.finish(&st, info, hasInfo)
}

// DeclaredTopics returns the topics of the file as ExportMCAP declares
// them to a PackWriter: each with its first channel's type and its channel
// metadata (less the edr.* keys PackWriter writes), so a rewrite keeps them.
func (p *PackReader) DeclaredTopics() []Topic {
	var out []Topic
	for i := range p.topics {
		if t := &p.topics[i]; t.MCAP != nil {
			out = append(out, Topic{Name: t.Name, Channel: t.Channel, Type: t.Type, Metadata: foreignMetadata(t.MCAP)})
		}
	}
	return out
}

// foreignMetadata is a channel's metadata less the keys PackWriter writes
// itself (edr.name, edr.channel, edr.type, edr.layout, edr.sequence).
func foreignMetadata(ci *ChannelInfo) map[string]string {
	var md map[string]string
	if ci == nil {
		return nil
	}
	for k, v := range ci.Metadata {
		switch k {
		case "edr.name", "edr.channel", "edr.type", MetadataLayout, MetadataSequence:
			continue
		}
		if md == nil {
			md = map[string]string{}
		}
		md[k] = v
	}
	return md
}
