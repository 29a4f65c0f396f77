package mcap

import (
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
	// rule, tag, severity, pre_ns, post_ns, id, and param.<key> entries).
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
	id ingest.ContentID
}

// topicState is a topic's current channel: one per (topic, type). A
// topic whose type changes gets a new channel; sequence numbers and the
// meta channel carry over.
type topicState struct {
	id, metaID uint16
	hasMeta    bool
	seq        uint32
	typ        ingest.Type    // the type declared (what a PackReader gives back)
	layout     *schema.Layout // transcoding x-edr-packed to json when not nil
	rawID      int            // the untranscoded channel, -1 until needed
	topic      Topic
}

// MetadataLayout is the channel metadata key holding the layout of a
// packed-struct topic transcoded to json, so a PackReader gives the topic
// back as the packed struct it was (docs/mcap.md).
const MetadataLayout = "edr.layout"

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
//   - sequence counts the topic's messages from 0.
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
	ts, ok := p.byType[typedKey{k, t.Type.OrRaw().ID()}]
	if !ok { // a type this topic had before goes back to its channel
		var err error
		if ts, err = p.newChannel(t); err != nil {
			return err
		}
	}
	ts.seq, ts.metaID, ts.hasMeta = cur.seq, cur.metaID, cur.hasMeta
	p.topics[k] = ts
	return nil
}

func (p *PackWriter) topic(name, channel string) (*topicState, error) {
	if ts, ok := p.topics[topicKey{name, channel}]; ok {
		return ts, nil
	}
	t, ok := p.types[topicKey{name, channel}]
	if !ok {
		t = Topic{Name: name, Channel: channel}
	}
	ts, err := p.newChannel(t)
	if err != nil {
		return nil, err
	}
	p.topics[topicKey{name, channel}] = ts
	return ts, nil
}

// newChannel adds the channel of topic t, transcoding a packed type.
func (p *PackWriter) newChannel(t Topic) (*topicState, error) {
	ts := &topicState{typ: t.Type.OrRaw(), rawID: -1, topic: t}
	ct := t
	if ts.typ.MessageEncoding == ingest.EncodingPacked && !p.keepPacked {
		// A layout that does not compile is written as it is, and said.
		l, err := schema.ParseLayout(ts.typ.Schema.Data)
		if err != nil && len(p.notes) < maxNotes {
			p.notes = append(p.notes, fmt.Sprintf("topic %s: type %s not transcoded to json, written as %s: %v",
				TopicName(t.Name, t.Channel), ts.typ.Schema.Name, ingest.EncodingPacked, err))
		}
		if err == nil {
			ts.layout = l
			name := ts.typ.Schema.Name
			ct.Type = ingest.Type{MessageEncoding: ingest.EncodingJSON,
				Schema: ingest.Schema{Name: name, Encoding: ingest.SchemaJSON, Data: l.JSONSchema(name)}}
			ct.Metadata = maps.Clone(t.Metadata)
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
	p.byType[typedKey{topicKey{t.Name, t.Channel}, ts.typ.ID()}] = ts
	return ts, nil
}

// rawChannel returns the channel for messages of a transcoded topic that
// cannot be transcoded (too short for the layout): the packed type as it
// is, on the same MCAP topic.
func (p *PackWriter) rawChannel(ts *topicState) (uint16, error) {
	if ts.rawID < 0 {
		t := ts.topic
		t.Type = ts.typ
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
	return p.add(name, channel, meta, genTs, doneTs, data, false)
}

// Borrows reports whether AddBorrowed borrows the data of the topic's next
// message (Writer.CanBorrow, and the topic is not transcoded); the topic's
// channel is created now if it was not (as its first Add would).
func (p *PackWriter) Borrows(name, channel string) (bool, error) {
	if !p.w.CanBorrow() {
		return false, nil
	}
	ts, err := p.topic(name, channel)
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
	return p.add(name, channel, nil, genTs, doneTs, data, true)
}

func (p *PackWriter) add(name, channel string, meta []byte, genTs, doneTs int64, data []byte, borrow bool) error {
	if p.w.reserved(data) {
		if ts, ok := p.topics[topicKey{name, channel}]; !ok || ts.layout != nil {
			// a new channel (or a raw one for a packed message that does
			// not transcode) would be appended over the reserved data
			p.held = append(p.held[:0], data...)
			data = p.held
		}
	}
	ts, err := p.topic(name, channel)
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
		if err := p.Add(m.Name, m.Channel, m.Meta, m.GenTs, doneTs, f.Data(i)); err != nil {
			return err
		}
	}
	return nil
}

// AddMetadata writes a pack-style metadata section (a name and opaque
// bytes) as a Metadata record with the bytes base64-encoded under "base64".
func (p *PackWriter) AddMetadata(name string, data []byte) error {
	return p.w.AddMetadata(name, map[string]string{"base64": base64.StdEncoding.EncodeToString(data)})
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
		kv := map[string]string{"id": u64(t.ID), "reason": t.Reason, "time_ns": i64(t.TimeNs),
			"pre_ns": i64(t.PreNs), "post_ns": i64(t.PostNs), "severity": strconv.Itoa(t.Severity)}
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
}

// ExportStats reports what ExportPack wrote.
type ExportStats struct {
	Frames   int
	Messages uint64 // pack messages read (an entry with meta and data counts once)
	Bytes    uint64 // data and meta bytes carried
	Written  int64  // MCAP bytes written
	// Notes are PackWriter.Notes: topics not transcoded, and why.
	Notes []string
}

// ExportPack converts the pack file behind r to MCAP on w, frames in file
// order, with the dump information (triggers, per-topic accounting) as
// Metadata records, the pack file's other metadata sections as Metadata
// named after them (value under "base64") and its header as
// MetadataPackHeader. Each topic's type comes from the file's type
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
		if name == dumpinfo.MetadataName {
			continue
		}
		b, _ := r.Metadata(name)
		if err := pw.AddMetadata(name, b); err != nil {
			return st, err
		}
	}
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
// information, and every other Metadata record as it was. Sequence numbers
// restart from 0 per topic; times are mapped as PackWriter maps them.
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
		if err := pw.Add(m.Name, m.Channel, m.Meta, m.GenTs, m.DoneTs, m.Data); err != nil {
			return st, err
		}
		st.Messages++
		st.Bytes += uint64(len(m.Meta) + len(m.Data))
	}
	info, hasInfo := p.DumpInfo()
	for _, md := range p.Info().Metadata {
		switch md.Name {
		case MetadataDump, MetadataTrigger, MetadataTopicStats:
			if hasInfo {
				continue // written again from info
			}
		}
		if err := pw.w.AddMetadata(md.Name, md.KV); err != nil {
			return st, err
		}
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
// itself (edr.name, edr.channel, edr.type, edr.layout).
func foreignMetadata(ci *ChannelInfo) map[string]string {
	var md map[string]string
	if ci == nil {
		return nil
	}
	for k, v := range ci.Metadata {
		switch k {
		case "edr.name", "edr.channel", "edr.type", MetadataLayout:
			continue
		}
		if md == nil {
			md = map[string]string{}
		}
		md[k] = v
	}
	return md
}
