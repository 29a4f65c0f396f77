package jsonl

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/pack"
)

// Export writes the dump src (pack or MCAP) to w as JSON lines: a
// header line (Header) and then one line per message in file order:
//
//	{"seq":0,"topic":"vehicle/speed","ts":1764670000010000000,"gen_ts":1764670000009999000,"data":"AACgQQ=="}
//
// seq counts messages from 0; ts is the message time (capture time, else
// producer time, else frame time; MCAP log_time); gen_ts the producer time;
// data the payload in standard base64, absent for a message without a data
// block. Two optional fields keep the round trip lossless: "done_ts" when
// the recorded capture time differs from ts (it was 0), and "meta" (base64)
// when the message has meta bytes. Frame boundaries are not kept: an
// import regroups messages into frames.
//
// An MCAP dump is read as pack messages (mcap.PackReader): an MCAP export
// of a pack dump gives the same lines as the pack dump, header included
// (writer and creation time come from its edr.pack_header record).
func Export(src *dumpfile.Source, w io.Writer) (*Report, error) {
	h := Header{Format: FormatName, Version: Version, Topics: []Topic{}}
	var rawInfo []byte
	var names []string
	var sections [][]byte
	if r := src.Pack(); r != nil {
		hdr := r.Header()
		h.Writer, h.CreatedNs = hdr.Writer, hdr.CreatedNs
		rawInfo, _ = r.Metadata(dumpinfo.MetadataName)
		for _, n := range r.MetadataNames() {
			if n != dumpinfo.MetadataName {
				b, _ := r.Metadata(n)
				names, sections = append(names, n), append(sections, b)
			}
		}
	} else {
		mp := src.MCAP()
		h.Writer, h.CreatedNs = mp.Header()
		rawInfo = mp.DumpInfoJSON()
		names, sections = mp.Sections()
	}
	if rawInfo != nil {
		if !json.Valid(rawInfo) {
			return nil, fmt.Errorf("%s: %w: metadata %s is not JSON", src.Path, ErrFormat, dumpinfo.MetadataName)
		}
		h.DumpInfo = json.RawMessage(rawInfo)
	}
	for i, n := range names {
		if h.Metadata == nil {
			h.Metadata = map[string][]byte{}
		}
		h.Metadata[n] = sections[i]
	}
	keys := map[topicKey]string{}
	used := map[string]bool{}
	for _, t := range src.Topics() {
		k := t.String()
		if used[k] { // a name holding '#' could collide with a channel
			k = pack.Topic(t.Name, t.Channel) + "~" + strconv.Itoa(len(h.Topics))
		}
		used[k] = true
		keys[topicKey{t.Name, t.Channel}] = k
		h.Topics = append(h.Topics, Topic{Topic: k, Name: t.Name, Channel: t.Channel, Type: t.Type, Messages: t.Messages})
	}
	sort.Slice(h.Topics, func(i, j int) bool { return h.Topics[i].Topic < h.Topics[j].Topic })
	bw := bufio.NewWriterSize(w, 256<<10)
	line, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	bw.Write(line)
	bw.WriteByte('\n')
	// Quoted topic keys, encoded once.
	quoted := map[topicKey][]byte{}
	for k, s := range keys {
		q, _ := json.Marshal(s)
		quoted[k] = q
	}
	rep := &Report{Topics: len(h.Topics)}
	buf := make([]byte, 0, 4096)
	err = src.InFileOrder(func(m *dumpfile.Message) error {
		q, ok := quoted[topicKey{m.Name, m.Channel}]
		if !ok {
			return fmt.Errorf("%s: %w: topic %s is missing from the index", src.Path, ErrFormat, pack.Topic(m.Name, m.Channel))
		}
		buf = appendMessage(buf[:0], rep.Messages, q, m.TimeNs, m.GenNs, m.DoneNs, m.Meta, m.Data)
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

// appendMessage appends one message line. quotedTopic is the topic as
// a JSON string; data nil means no data block.
func appendMessage(dst []byte, seq uint64, quotedTopic []byte, ts, gen, done int64, meta, data []byte) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"topic":`...)
	dst = append(dst, quotedTopic...)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	dst = append(dst, `,"gen_ts":`...)
	dst = strconv.AppendInt(dst, gen, 10)
	if done != ts {
		dst = append(dst, `,"done_ts":`...)
		dst = strconv.AppendInt(dst, done, 10)
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
