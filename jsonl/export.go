package jsonl

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"

	"github.com/edr-lite/edr-lite/ingest"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/pack"
)

// Message is one message as Export writes it: the pack model, as
// dumpfile reads it from a pack or MCAP dump.
type Message struct {
	Name, Channel string
	Meta          []byte
	GenNs         int64  // producer time as recorded (0 = unknown)
	DoneNs        int64  // capture time as recorded (0 = unknown)
	TimeNs        int64  // the message time, written as ts
	Data          []byte // nil when the message has no data block
	// HasSeq says whether Seq is the producer's sequence number of the
	// message (an MCAP sequence), written as "sequence".
	HasSeq bool
	Seq    uint64
	// Type is the message's type (nil: the topic's, from the header); a
	// change of type within a topic is written on its first message.
	Type *ingest.Type
}

// Export writes a dump to w as JSON lines: a header line (h) and then one
// line per message, in the order walk hands them to its callback (file
// order):
//
//	{"seq":0,"topic":"vehicle/speed","ts":1764670000010000000,"gen_ts":1764670000009999000,"data":"AACgQQ=="}
//
// seq counts messages from 0; ts is the message time (capture time, else
// producer time, else frame time; MCAP log_time); gen_ts the producer time;
// data the payload in standard base64, absent for a message without a data
// block. Optional fields keep the round trip lossless: "done_ts" when the
// recorded capture time differs from ts (it was 0), "sequence" when the
// message has its producer's sequence number (Message.HasSeq: an MCAP
// message's, or a pack message's seq), "meta" (base64) when
// the message has meta bytes, and "type_id" when the message's type
// (Message.Type) differs from what its topic had so far (the header's
// types; "" for a message that has none of them: the raw bytes of a
// message before its topic's first type, which an import writes before
// the type as well). Frame boundaries are not kept: an import regroups
// messages into frames.
//
// h gives the dump's writer, creation time, dump information (as stored;
// it must be JSON), other metadata sections, attachments (the header line
// must stay within MaxLineBytes) and its topics in the dump's
// order with name, channel, type and count. Export sets Format and
// Version and each topic's key (Topic: "name", or "name#channel", made
// unique) and lists the topics by key. Every message must belong to one of
// them. name labels errors (the dump's path). dumpfile.Export
// calls Export for a pack or MCAP dump.
func Export(w io.Writer, name string, h Header, walk func(fn func(m *Message) error) error) (*Report, error) {
	h.Format, h.Version = FormatName, Version
	if h.DumpInfo != nil && !json.Valid(h.DumpInfo) {
		return nil, fmt.Errorf("%s: %w: metadata %s is not JSON", name, ErrFormat, dumpinfo.MetadataName)
	}
	quoted := h.keyTopics()
	cur := h.typeTable() // each topic's type as the lines have said it
	listed := make(map[string]bool, len(h.Types))
	for _, e := range h.Types {
		listed[e.ID] = true
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	line, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if len(line) > MaxLineBytes { // what Import would refuse
		return nil, fmt.Errorf("%s: %w: the header line (%d attachments, %d metadata sections) is %d bytes, over the %d an import reads",
			name, ErrFormat, len(h.Attachments), len(h.Metadata), len(line), MaxLineBytes)
	}
	bw.Write(line)
	bw.WriteByte('\n')
	rep := &Report{Topics: len(h.Topics)}
	buf := make([]byte, 0, 4096)
	err = walk(func(m *Message) error {
		k := topicKey{m.Name, m.Channel}
		q, ok := quoted[k]
		if !ok {
			return fmt.Errorf("%s: %w: topic %s is missing from the index", name, ErrFormat, pack.Topic(m.Name, m.Channel))
		}
		typeID := noTypeID
		if c := cur[k]; m.Type != nil && c.ptr != m.Type {
			c.ptr = m.Type
			if !c.typ.Equal(*m.Type) {
				c.typ = *m.Type
				typeID = m.Type.ID().String()
				if !listed[typeID] {
					// Not one of the topic's types: the raw bytes of a
					// message before its first type (a pack file's
					// messages before the topic's first type section).
					typeID = ""
				}
			}
		}
		buf = appendMessage(buf[:0], rep.Messages, q, m, typeID)
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		rep.Messages++
		rep.Bytes += uint64(len(m.Data))
		return nil
	})
	if err != nil {
		return rep, err
	}
	return rep, bw.Flush()
}

// curType is what the lines have said of a topic's type so far.
type curType struct {
	typ ingest.Type
	ptr *ingest.Type // the Message.Type last seen (pointer: compared first)
}

// typeTable fills h.Types with every distinct type of the topics (in topic
// order) and each topic's TypeID with its first, and returns the topics'
// starting types.
func (h *Header) typeTable() map[topicKey]*curType {
	cur := map[topicKey]*curType{}
	seen := map[string]bool{}
	for i := range h.Topics {
		t := &h.Topics[i]
		c := &curType{}
		cur[topicKey{t.Name, t.Channel}] = c
		for j, typ := range t.Types {
			e := typeEntry(typ.OrRaw())
			if j == 0 {
				t.TypeID, c.typ = e.ID, typ.OrRaw()
			}
			if !seen[e.ID] {
				seen[e.ID] = true
				h.Types = append(h.Types, e)
			}
		}
	}
	return cur
}

// keyTopics gives each topic its key ("name", or "name#channel"; a key
// taken already gets "~" and the topic's index), lists the topics by key
// and returns the keys as JSON strings by name and channel. h.Topics is
// copied first: the caller's slice is left as it was.
func (h *Header) keyTopics() map[topicKey][]byte {
	h.Topics = slices.Clone(h.Topics)
	if h.Topics == nil {
		h.Topics = []Topic{}
	}
	quoted := map[topicKey][]byte{}
	used := map[string]bool{}
	for i := range h.Topics {
		t := &h.Topics[i]
		k := t.Name
		if t.Channel != "" {
			k += "#" + t.Channel
		}
		if used[k] { // a name holding '#' could collide with a channel
			k = pack.Topic(t.Name, t.Channel) + "~" + strconv.Itoa(i)
		}
		used[k] = true
		t.Topic = k
		quoted[topicKey{t.Name, t.Channel}], _ = json.Marshal(k)
	}
	sort.Slice(h.Topics, func(i, j int) bool { return h.Topics[i].Topic < h.Topics[j].Topic })
	return quoted
}

// noTypeID: a message line without "type_id" (its topic's type goes on).
const noTypeID = "-"

// appendMessage appends message m's line, the seq-th. quotedTopic is the
// topic as a JSON string; typeID noTypeID means no "type_id", "" an empty
// one (untyped from here).
func appendMessage(dst []byte, seq uint64, quotedTopic []byte, m *Message, typeID string) []byte {
	meta, data := m.Meta, m.Data
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"topic":`...)
	dst = append(dst, quotedTopic...)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, m.TimeNs, 10)
	dst = append(dst, `,"gen_ts":`...)
	dst = strconv.AppendInt(dst, m.GenNs, 10)
	if m.DoneNs != m.TimeNs {
		dst = append(dst, `,"done_ts":`...)
		dst = strconv.AppendInt(dst, m.DoneNs, 10)
	}
	if m.HasSeq {
		dst = append(dst, `,"sequence":`...)
		dst = strconv.AppendUint(dst, m.Seq, 10)
	}
	if typeID != noTypeID {
		dst = append(dst, `,"type_id":"`...)
		dst = append(dst, typeID...)
		dst = append(dst, '"')
	}
	if len(meta) > 0 {
		dst = append(dst, `,"meta":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, meta)
		dst = append(dst, '"')
	}
	if data != nil {
		dst = append(dst, `,"data":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, data)
		dst = append(dst, '"')
	}
	return append(dst, "}\n"...)
}
