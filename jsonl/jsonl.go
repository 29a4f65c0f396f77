package jsonl

import (
	"bufio"
	"bytes"
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

// The header's "format" and "version".
const (
	FormatName = "edr-lite-jsonl"
	Version    = 1
)

// Header is the first line of a JSON-lines export.
type Header struct {
	Format    string  `json:"format"`
	Version   int     `json:"version"`
	Writer    string  `json:"writer,omitempty"`     // the pack file's writer
	CreatedNs int64   `json:"created_ns,omitempty"` // the pack file's creation time
	Topics    []Topic `json:"topics"`
	// DumpInfo is the dump's information (triggers, per-topic accounting)
	// exactly as stored in the pack file.
	DumpInfo json.RawMessage `json:"dump_info,omitempty"`
	// Metadata holds the other metadata sections, base64.
	Metadata map[string][]byte `json:"metadata,omitempty"`
}

// Topic is one topic of the header. Messages name it by Topic: "name",
// or "name#channel" when there is a channel.
type Topic struct {
	Topic    string `json:"topic"`
	Name     string `json:"name"`
	Channel  string `json:"channel,omitempty"`
	Type     string `json:"type,omitempty"`
	Messages uint64 `json:"messages"`
}

// message is a message line as Import decodes it.
type message struct {
	Seq    *uint64 `json:"seq"`
	Topic  *string `json:"topic"`
	TS     *int64  `json:"ts"`
	GenTS  int64   `json:"gen_ts"`
	DoneTS *int64  `json:"done_ts"`
	Meta   []byte  `json:"meta"`
	Data   *string `json:"data"`
}

// topicKey is a topic as messages carry it.
type topicKey struct{ name, channel string }

// Report says what an export or import carried.
type Report struct {
	Topics   int
	Messages uint64
	Bytes    uint64 // data bytes
}

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

// Import reads a JSON-lines export from r and writes its messages,
// dump information and metadata to a pack Writer made by mk (given the
// header's writer name and creation time), which it closes. Messages are
// regrouped into frames by Writer.Add. Errors name the line and field; on
// error the output is incomplete and the caller should discard it.
//
// Re-exporting an import gives the same JSON lines, except for a message
// that had neither a producer nor a capture time (its ts came from its
// frame, which the import does not rebuild).
func Import(r io.Reader, mk func(pack.WriterOptions) (*pack.Writer, error)) (rep *Report, err error) {
	br := bufio.NewReaderSize(r, 256<<10)
	lineNo := 0
	readLine := func() ([]byte, error) {
		line, err := br.ReadBytes('\n')
		if err == io.EOF && len(line) > 0 {
			err = nil
		}
		if err != nil {
			return nil, err
		}
		lineNo++
		return bytes.TrimRight(line, "\r\n"), nil
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrFormat, lineNo, fmt.Sprintf(format, a...))
	}
	line, err := readLine()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: empty input (no header line)", ErrFormat)
	}
	if err != nil {
		return nil, err
	}
	var h Header
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, bad("header: %v", err)
	}
	if h.Format != FormatName {
		return nil, bad("header: format %q, want %q", h.Format, FormatName)
	}
	if h.Version != Version {
		return nil, bad("header: version %d not supported (want %d)", h.Version, Version)
	}
	w, err := mk(pack.WriterOptions{Writer: h.Writer, CreatedNs: h.CreatedNs})
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := w.Close(); err == nil && cerr != nil {
			rep, err = nil, cerr
		}
	}()
	topics := map[string]*Topic{}
	for i := range h.Topics {
		t := &h.Topics[i]
		if t.Name == "" || t.Topic == "" {
			return nil, bad("header: topics[%d]: empty name or topic", i)
		}
		if topics[t.Topic] != nil {
			return nil, bad("header: topics[%d]: topic %q listed twice", i, t.Topic)
		}
		topics[t.Topic] = t
	}
	if len(h.DumpInfo) > 0 && string(h.DumpInfo) != "null" {
		var d dumpinfo.Info
		if err := json.Unmarshal(h.DumpInfo, &d); err != nil {
			return nil, bad("header: dump_info: %v", err)
		}
		if err := w.AddMetadata(dumpinfo.MetadataName, h.DumpInfo); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(h.Metadata))
	for n := range h.Metadata {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if n == dumpinfo.MetadataName {
			return nil, bad("header: metadata %q belongs in dump_info", n)
		}
		if err := w.AddMetadata(n, h.Metadata[n]); err != nil {
			return nil, err
		}
	}
	rep = &Report{Topics: len(h.Topics)}
	var data, meta []byte
	for {
		line, err := readLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			return nil, bad("empty line")
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, bad("%v", err)
		}
		switch {
		case m.Seq == nil:
			return nil, bad("no seq")
		case *m.Seq != rep.Messages:
			return nil, bad("seq %d, want %d (lines missing or out of order)", *m.Seq, rep.Messages)
		case m.Topic == nil:
			return nil, bad("no topic")
		case m.TS == nil:
			return nil, bad("no ts")
		}
		t := topics[*m.Topic]
		if t == nil {
			return nil, bad("topic %q is not in the header", *m.Topic)
		}
		done := *m.TS
		if m.DoneTS != nil {
			done = *m.DoneTS
		}
		data = data[:0]
		var d []byte
		if m.Data != nil {
			data, err = base64.StdEncoding.AppendDecode(data, []byte(*m.Data))
			if err != nil {
				return nil, bad("data: %v", err)
			}
			d = data
			if d == nil {
				d = []byte{}
			}
		}
		meta = append(meta[:0], m.Meta...)
		if err := w.Add(t.Name, t.Channel, meta, m.GenTS, done, d); err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		rep.Messages++
		rep.Bytes += uint64(len(d))
	}
	return rep, nil
}
