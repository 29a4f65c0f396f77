package mcap

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/schema"
)

// MetadataPackHeader is the Metadata record ExportPack writes with the
// pack file's header (keys "writer" and "created_ns"), so that reading the
// MCAP back as a pack dump gives the same writer and creation time.
const MetadataPackHeader = "edr.pack_header"

// PackMessage is one pack-model message read back from MCAP by a
// PackReader.
type PackMessage struct {
	Name, Channel string
	Meta          []byte // nil when none
	GenTs         int64  // producer time: publish_time
	DoneTs        int64  // capture time: log_time
	// HasSeq: Seq is the producer's sequence number, the MCAP sequence of
	// the (data) message: on channels of other writers, and on edr-lite's
	// marked MetadataSequence; edr-lite's other channels were numbered by
	// its writer (Seq 0, HasSeq false).
	HasSeq bool
	Seq    uint64
	Data   []byte // never nil, except for a meta message without its data message
	// Type is the type of the message's channel (see PackReader); the same
	// pointer for every message of a channel, so a change of pointer within
	// a topic is a change of type. Never nil.
	Type *ingest.Type

	chanInfo *ChannelInfo
}

// PackTopic is one pack topic of an MCAP file: a channel (and the channel
// carrying its meta bytes, if any) seen as "name#channel".
type PackTopic struct {
	Name, Channel string
	// Type is the type of the topic's first channel (see PackReader);
	// Types counts its distinct types (more than one when it changed).
	Type     ingest.Type
	Types    int
	Messages uint64       // messages on the topic's channels, meta channels not counted
	MCAP     *ChannelInfo // the first channel of the topic; nil for a topic known only by its meta channel
}

type chanMap struct {
	topic  int  // index in PackReader.topics
	meta   bool // carries the meta bytes of topic's messages
	metaID int  // main channel: the id of its meta channel, -1 when none
	typ    *ingest.Type
	layout *schema.Layout // a packed topic transcoded to json: re-encode with it
	ci     *ChannelInfo
	seq    bool // its sequences are the producers' (PackMessage.HasSeq)
}

// PackReader reads an MCAP file as a pack dump: pack-model messages, the
// dump information and metadata sections. It is the inverse of PackWriter
// (docs/mcap.md): a Message on a channel with edr.name metadata belongs to
// topic edr.name#edr.channel; a Message on its meta channel
// (MetaChannelSuffix, MetaEncoding) that follows it at the same log_time is
// its meta; log_time is the capture time (DoneTs) and publish_time the
// producer time (GenTs). Channels of other writers (no edr.name) are the
// topic Channel.topic with an empty channel. The dump information comes
// from MetadataDump's "json" (else from the MetadataTrigger and
// MetadataTopicStats records).
//
// Each channel has a type (PackMessage.Type): its message encoding and
// Schema record; a json channel with MetadataLayout is a packed-struct
// topic PackWriter transcoded, given back as x-edr-packed with that layout
// and its messages re-encoded to packed bytes (schema.Layout.AppendPacked:
// canonical bytes); opaque channels (x-edr-raw, or edr.type only) are
// ingest.Raw of their type name. A channel whose encodings do not pair
// (ingest.Type.Validate) is given as raw bytes named by its schema. Several
// channels of one topic (a type that changed) are one pack topic.
//
// Messages come in log_time order (equal times in file order), or in file
// order after FileOrder, through a Cursor: see its costs. A PackReader is
// not safe for concurrent use; it does not own the Reader.
type PackReader struct {
	r        *Reader
	c        *Cursor
	topics   []PackTopic
	chans    []chanMap // by channel id
	info     dumpinfo.Info
	hasInfo  bool
	infoJSON []byte
	writer   string
	created  int64

	msg     PackMessage
	pending bool // the cursor is on a message Next has not returned yet
	buf     []byte
}

// NewPackReader makes the first pass over r's file (Reader.Cursor) and
// returns a PackReader before the first message in log_time order. A dump
// information record that does not parse is an error naming the record.
func NewPackReader(r *Reader) (*PackReader, error) {
	c, err := r.Cursor()
	if err != nil {
		return nil, err
	}
	p := &PackReader{r: r, c: c, writer: r.Library}
	p.info, p.hasInfo, err = ReadDumpInfo(c.info.Metadata)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	for _, md := range c.info.Metadata {
		if md.Name == MetadataDump && md.KV["json"] != "" {
			p.infoJSON = []byte(md.KV["json"])
		}
		if md.Name == MetadataPackHeader {
			p.writer = md.KV["writer"]
			p.created, _ = strconv.ParseInt(md.KV["created_ns"], 10, 64)
		}
	}
	if p.hasInfo && p.infoJSON == nil {
		if p.infoJSON, err = json.Marshal(p.info); err != nil {
			return nil, fmt.Errorf("%s: dump info: %w", r.name, err)
		}
	}
	if err := p.mapChannels(); err != nil {
		return nil, err
	}
	return p, nil
}

// mapChannels builds the topics from the channels, in channel id order.
func (p *PackReader) mapChannels() error {
	type key struct{ name, channel string }
	byKey := map[key]int{}
	topicOf := func(k key) int {
		i, ok := byKey[k]
		if !ok {
			i = len(p.topics)
			byKey[k] = i
			p.topics = append(p.topics, PackTopic{Name: k.name, Channel: k.channel})
		}
		return i
	}
	p.chans = make([]chanMap, len(p.c.chans))
	for i := range p.chans {
		p.chans[i] = chanMap{topic: -1, metaID: -1}
	}
	info := p.c.info
	for i := range info.Channels {
		ci := &info.Channels[i]
		name, edr := ci.Metadata["edr.name"]
		if edr && ci.MessageEncoding == MetaEncoding && ci.Metadata["edr.part"] == "meta" {
			p.chans[ci.ID] = chanMap{topic: topicOf(key{name, ci.Metadata["edr.channel"]}), meta: true, metaID: -1}
			continue
		}
		k := key{ci.Topic, ""}
		if edr {
			k = key{name, ci.Metadata["edr.channel"]}
		}
		typ, layout, err := channelType(ci, edr)
		if err != nil {
			return fmt.Errorf("mcap: %s: channel %d (%s): %w", p.r.name, ci.ID, ci.Topic, err)
		}
		t := &p.topics[topicOf(k)]
		if t.MCAP == nil {
			t.MCAP, t.Type, t.Types = ci, *typ, 1
		} else if !t.Type.Equal(*typ) && t.Types < 2 {
			t.Types = 2 // a lower bound when more: for info, not accounting
		}
		t.Messages += ci.Messages
		p.chans[ci.ID].topic = byKey[k]
		p.chans[ci.ID].typ, p.chans[ci.ID].layout, p.chans[ci.ID].ci = typ, layout, ci
		p.chans[ci.ID].seq = !edr || ci.Metadata[MetadataSequence] == SequenceProducer
	}
	// A main channel's meta channel: the last meta channel of its topic.
	metaOf := map[int]int{}
	for id, cm := range p.chans {
		if cm.meta {
			metaOf[cm.topic] = id
		}
	}
	for id, cm := range p.chans {
		if meta, ok := metaOf[cm.topic]; ok && !cm.meta && cm.topic >= 0 {
			p.chans[id].metaID = meta
		}
	}
	return nil
}

// ChannelType is the type of an MCAP channel as it is stored: its message
// encoding and Schema record (a packed topic PackWriter transcoded is json
// with its JSON Schema here; PackReader gives it back packed). A channel
// whose encodings do not pair is raw bytes named by its schema.
func ChannelType(ci *ChannelInfo) *ingest.Type {
	t := ingest.Type{Schema: channelSchema(ci)}
	t.MessageEncoding = ci.MessageEncoding
	if t.MessageEncoding == "" || t.Validate() != nil {
		t = ingest.Raw(t.Schema.Name)
	}
	return &t
}

// channelSchema is ci's Schema record as an ingest.Schema (no data: nil).
func channelSchema(ci *ChannelInfo) ingest.Schema {
	if ci.Schema == nil {
		return ingest.Schema{}
	}
	s := ingest.Schema{Name: ci.Schema.Name, Encoding: ci.Schema.Encoding, Data: ci.Schema.Data}
	if len(s.Data) == 0 {
		s.Data = nil
	}
	return s
}

// channelType is the type of a channel (see PackReader) and, for a packed
// topic transcoded to json, its compiled layout.
func channelType(ci *ChannelInfo, edr bool) (*ingest.Type, *schema.Layout, error) {
	t := ingest.Type{Schema: channelSchema(ci)}
	if lay, ok := ci.Metadata[MetadataLayout]; edr && ok && ci.MessageEncoding == ingest.EncodingJSON {
		l, err := schema.ParseLayout([]byte(lay))
		if err != nil {
			return nil, nil, fmt.Errorf("metadata %s: %w", MetadataLayout, err)
		}
		t = ingest.Type{MessageEncoding: ingest.EncodingPacked,
			Schema: ingest.Schema{Name: t.Schema.Name, Encoding: ingest.SchemaLayout, Data: []byte(lay)}}
		return &t, l, nil
	}
	t.MessageEncoding = ci.MessageEncoding
	if edr && t.Schema.Name == "" {
		t.Schema.Name = ci.Metadata["edr.type"]
	}
	if t.MessageEncoding == "" || t.Validate() != nil {
		t = ingest.Raw(t.Schema.Name)
	}
	return &t, nil, nil
}

// TopicTypes returns the distinct types of topic name#channel's channels,
// in channel order (the order a writer declared them).
func (p *PackReader) TopicTypes(name, channel string) []*ingest.Type {
	var out []*ingest.Type
	for _, cm := range p.chans {
		if cm.meta || cm.topic < 0 || cm.typ == nil {
			continue
		}
		if t := &p.topics[cm.topic]; t.Name != name || t.Channel != channel {
			continue
		}
		dup := false
		for _, o := range out {
			dup = dup || o.Equal(*cm.typ)
		}
		if !dup {
			out = append(out, cm.typ)
		}
	}
	return out
}

// Reader returns the underlying Reader.
func (p *PackReader) Reader() *Reader { return p.r }

// Info returns the file's figures from the first pass.
func (p *PackReader) Info() *Info { return p.c.info }

// Topics returns the topics, in the order of their first channel.
func (p *PackReader) Topics() []PackTopic { return p.topics }

// DumpInfo returns the dump information and whether the file has any.
func (p *PackReader) DumpInfo() (dumpinfo.Info, bool) { return p.info, p.hasInfo }

// DumpInfoJSON returns the dump information as JSON, exactly as the writer
// stored it (nil when the file has none).
func (p *PackReader) DumpInfoJSON() []byte { return p.infoJSON }

// Header returns the writer and creation time of the pack file the MCAP
// was exported from (MetadataPackHeader), else the MCAP library and 0.
func (p *PackReader) Header() (writer string, createdNs int64) { return p.writer, p.created }

// Sections returns the file's other metadata as pack metadata sections
// (one per name: pack's names are unique), in the order of each name's
// first record: a name with one record whose only key is "base64" (as
// PackWriter.AddMetadata writes other bytes) gives the decoded bytes; any
// other record its key/value pairs as a JSON object, and a name several
// records share a JSON array of those (MetadataRecords reads either back,
// and PackWriter.AddMetadata writes the records again). The edr.* records
// of the dump information and pack header are left out.
func (p *PackReader) Sections() (names []string, data [][]byte) {
	recs := map[string][]map[string]string{}
	for _, md := range p.c.info.Metadata {
		switch md.Name {
		case MetadataDump, MetadataTrigger, MetadataTopicStats, MetadataPackHeader:
			continue
		}
		if _, seen := recs[md.Name]; !seen {
			names = append(names, md.Name)
		}
		kv := md.KV
		if kv == nil {
			kv = map[string]string{}
		}
		recs[md.Name] = append(recs[md.Name], kv)
	}
	for _, n := range names {
		rs := recs[n]
		if v, ok := rs[0]["base64"]; ok && len(rs) == 1 && len(rs[0]) == 1 {
			if b, err := base64.StdEncoding.DecodeString(v); err == nil && base64.StdEncoding.EncodeToString(b) == v {
				data = append(data, b)
				continue
			}
		}
		b, _ := metadataSection(rs) // string keys and values: never fails
		data = append(data, b)
	}
	return names, data
}

// SeekTime restarts in log_time order at the first message with DoneTs >=
// fromNs.
func (p *PackReader) SeekTime(fromNs int64) {
	p.c.SeekTime(uint64(max(fromNs, 0)))
	p.pending = false
}

// FileOrder restarts in file order.
func (p *PackReader) FileOrder() {
	p.c.FileOrder()
	p.pending = false
}

// Message returns the current message. It is valid until the next Next,
// SeekTime or FileOrder (Data and Meta alias the mapping, a decompressed
// chunk or the reader's buffer).
func (p *PackReader) Message() *PackMessage { return &p.msg }

func clampNs(t uint64) int64 { return int64(min(t, math.MaxInt64)) }

// Next moves to the next pack message and reports whether there is one.
// A message whose topic has a meta channel is copied (the next MCAP message
// is read to find its meta).
func (p *PackReader) Next() (bool, error) {
	if !p.pending {
		if ok, err := p.c.Next(); !ok || err != nil {
			return false, err
		}
	}
	p.pending = false
	m := p.c.Message()
	cm := p.chans[m.ChannelID]
	t := &p.topics[cm.topic]
	p.msg = PackMessage{Name: t.Name, Channel: t.Channel, GenTs: clampNs(m.PublishTime), DoneTs: clampNs(m.LogTime),
		Data: m.Data, Type: cm.typ, chanInfo: cm.ci}
	if cm.seq {
		p.msg.Seq, p.msg.HasSeq = uint64(m.Sequence), true
	}
	if cm.meta { // no data message before it: a message with meta only
		p.msg.Meta, p.msg.Data = m.Data, nil
		p.msg.Type = &p.topics[cm.topic].Type
		return true, nil
	}
	if cm.layout != nil {
		b, err := cm.layout.AppendPacked(p.buf[:0], m.Data)
		if err != nil {
			return false, fmt.Errorf("mcap: %s: channel %d (%s), message at log_time %d: transcoded %s message does not match its layout: %w",
				p.r.name, m.ChannelID, cm.ci.Topic, m.LogTime, t.Type.Schema.Name, err)
		}
		if b == nil {
			b = []byte{}
		}
		p.buf = b
		p.msg.Data = p.buf
	}
	if cm.metaID < 0 {
		return true, nil
	}
	if cm.layout == nil {
		if p.buf == nil {
			p.buf = make([]byte, 0, len(m.Data)+1)
		}
		p.buf = append(p.buf[:0], m.Data...)
		p.msg.Data = p.buf
	}
	logTime := m.LogTime
	ok, err := p.c.Next()
	if err != nil {
		return false, err
	}
	if ok {
		if next := p.c.Message(); int(next.ChannelID) == cm.metaID && next.LogTime == logTime {
			p.msg.Meta = next.Data
		} else {
			p.pending = true
		}
	}
	return true, nil
}

// ReadDumpInfo rebuilds a dump's dumpinfo.Info from its Metadata records:
// MetadataDump's "json" key when there is one, otherwise the
// MetadataTrigger and MetadataTopicStats records (what edr-lite's info
// shows). ok is false when there are none of these.
func ReadDumpInfo(md []Metadata) (d dumpinfo.Info, ok bool, err error) {
	for _, m := range md {
		if m.Name == MetadataDump && m.KV["json"] != "" {
			d, err := dumpinfo.Decode([]byte(m.KV["json"]))
			if err != nil {
				return dumpinfo.Info{}, false, fmt.Errorf("mcap: metadata %s: json: %w", MetadataDump, err)
			}
			return d, true, nil
		}
	}
	i64 := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	u64 := func(s string) uint64 { n, _ := strconv.ParseUint(s, 10, 64); return n }
	for _, m := range md {
		kv := m.KV
		switch m.Name {
		case MetadataTrigger:
			t := dumpinfo.Trigger{ID: u64(kv["id"]), Reason: kv["reason"], Source: kv["source"], Rule: kv["rule"], Tag: kv["tag"],
				Severity: int(i64(kv["severity"])), TimeNs: i64(kv["time_ns"]), PreNs: i64(kv["pre_ns"]), PostNs: i64(kv["post_ns"]),
				FromNs: i64(kv["from_ns"]), ToNs: i64(kv["to_ns"])}
			_, t.PreSet = kv["pre_ns"]
			_, t.PostSet = kv["post_ns"]
			for k, v := range kv {
				if p, ok := strings.CutPrefix(k, "param."); ok {
					if t.Params == nil {
						t.Params = map[string]string{}
					}
					t.Params[p] = v
				}
			}
			d.Triggers, ok = append(d.Triggers, t), true
		case MetadataTopicStats:
			d.Topics = append(d.Topics, dumpinfo.TopicAccount{Topic: kv["topic"], Type: kv["type"], Messages: u64(kv["messages"]),
				Bytes: u64(kv["bytes"]), Overwritten: u64(kv["overwritten"]), Oversize: u64(kv["oversize"]),
				SkippedBusy: u64(kv["skipped_busy"]), LostAtSource: u64(kv["lost_at_source"]),
				FirstNs: i64(kv["first_ns"]), LastNs: i64(kv["last_ns"]), Cut: u64(kv["cut"])})
			ok = true
		}
	}
	d.Normalize()
	return d, ok, nil
}
