package mcap

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/edr-lite/edr-lite/dumpinfo"
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
	Data          []byte // never nil, except for a meta message without its data message
}

// PackTopic is one pack topic of an MCAP file: a channel (and the channel
// carrying its meta bytes, if any) seen as "name#channel".
type PackTopic struct {
	Name, Channel string
	// Type is the channel's edr.type metadata in a file written by
	// edr-lite; for other writers the schema name, else the message
	// encoding.
	Type     string
	Messages uint64       // messages on the topic's channels, meta channels not counted
	MCAP     *ChannelInfo // the first channel of the topic; nil for a topic known only by its meta channel
}

type chanMap struct {
	topic  int  // index in PackReader.topics
	meta   bool // carries the meta bytes of topic's messages
	metaID int  // main channel: the id of its meta channel, -1 when none
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
	p.mapChannels()
	return p, nil
}

// mapChannels builds the topics from the channels, in channel id order.
func (p *PackReader) mapChannels() {
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
		typ := ci.MessageEncoding
		if ci.Schema != nil && ci.Schema.Name != "" {
			typ = ci.Schema.Name
		}
		if edr {
			k, typ = key{name, ci.Metadata["edr.channel"]}, ci.Metadata["edr.type"]
		}
		t := &p.topics[topicOf(k)]
		if t.MCAP == nil {
			t.MCAP, t.Type = ci, typ
		}
		t.Messages += ci.Messages
		p.chans[ci.ID].topic = byKey[k]
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

// Sections returns the file's other metadata as pack metadata sections, in
// file order: a record with a single "base64" key (as PackWriter.AddMetadata
// writes) gives the decoded bytes, any other record its key/value pairs as
// a JSON object. The edr.* records of the dump information and pack header
// are left out.
func (p *PackReader) Sections() (names []string, data [][]byte) {
	for _, md := range p.c.info.Metadata {
		switch md.Name {
		case MetadataDump, MetadataTrigger, MetadataTopicStats, MetadataPackHeader:
			continue
		}
		v, ok := md.KV["base64"]
		b, err := base64.StdEncoding.DecodeString(v)
		if !ok || len(md.KV) != 1 || err != nil {
			b, _ = json.Marshal(md.KV) // string keys and values: never fails
		}
		names, data = append(names, md.Name), append(data, b)
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
	p.msg = PackMessage{Name: t.Name, Channel: t.Channel, GenTs: clampNs(m.PublishTime), DoneTs: clampNs(m.LogTime), Data: m.Data}
	if cm.meta { // no data message before it: a message with meta only
		p.msg.Meta, p.msg.Data = m.Data, nil
		return true, nil
	}
	if cm.metaID < 0 {
		return true, nil
	}
	if p.buf == nil {
		p.buf = make([]byte, 0, len(m.Data)+1)
	}
	p.buf = append(p.buf[:0], m.Data...)
	p.msg.Data = p.buf
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
				Severity: int(i64(kv["severity"])), TimeNs: i64(kv["time_ns"]), PreNs: i64(kv["pre_ns"]), PostNs: i64(kv["post_ns"])}
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
				FirstNs: i64(kv["first_ns"]), LastNs: i64(kv["last_ns"])})
			ok = true
		}
	}
	return d, ok, nil
}
