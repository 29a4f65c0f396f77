package dumpfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/schema"
)

// WriterOptions configure a Writer.
type WriterOptions struct {
	Format      string // FormatPack ("" too) or FormatMCAP
	Compression string // "none" ("" too), "lz4" or "zstd"
	// Writer names the program in the file (pack header, MCAP library);
	// "" is "edr-lite".
	Writer string
	// KeepPacked (MCAP) writes packed-struct topics as they are instead of
	// transcoding them to JSON with a JSON Schema that viewers plot
	// (mcap.Options.KeepPacked).
	KeepPacked bool
}

// ErrTimeOrder is returned by Writer.Write for a message earlier than the
// one written before it.
var ErrTimeOrder = errors.New("dumpfile: message earlier than the one before")

// Writer writes a dump, pack or MCAP, whose topics carry their types
// (message encoding and schema): "edr-lite info" shows each topic's type
// and "edr-lite cat --decode" decodes its messages, as for the recorder's
// own dumps. SetType declares a topic's type before its messages (or
// changes it from then on), Write adds a message, WriteMessage copies one
// read from a Timeline with its type, Close records the dump information
// (each topic's messages, bytes, first and last time and type name, the
// window they span, and the triggers given to SetInfo) and completes the
// file. Messages come in time order.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	path   string // "" for a stream
	format string
	sink   rewriteSink
	types  map[topicKey]*writerTopic
	order  []topicKey
	info   dumpinfo.Info
	lastNs int64
	n      uint64
	done   bool
}

type writerTopic struct {
	declared ingest.Type  // the type SetType gave (zero: raw)
	written  *ingest.Type // the type the file has for the topic now; nil before its first message
	from     *ingest.Type // the type pointer written was last checked against (&declared, or a Message's)
	changed  bool         // SetType since
	msgs     uint64
	bytes    uint64
	first    int64
	last     int64
}

// Create writes a dump file at path: written as path.tmp and renamed to
// path by Close (a file already at path is replaced then), removed by
// Abort.
func Create(path string, opts WriterOptions) (*Writer, error) {
	return newDumpWriter(path, nil, opts)
}

// NewWriter writes a dump to w (a pack stream, or MCAP); Close does not
// close w.
func NewWriter(w io.Writer, opts WriterOptions) (*Writer, error) {
	if w == nil {
		return nil, errors.New("dumpfile: NewWriter: nil io.Writer")
	}
	return newDumpWriter("", w, opts)
}

func newDumpWriter(path string, w io.Writer, opts WriterOptions) (*Writer, error) {
	switch opts.Format {
	case "":
		opts.Format = FormatPack
	case FormatPack, FormatMCAP:
	default:
		return nil, fmt.Errorf("dumpfile: cannot write format %q (want %s or %s)", opts.Format, FormatPack, FormatMCAP)
	}
	if opts.Writer == "" {
		opts.Writer = "edr-lite"
	}
	file := path
	if path != "" && opts.Format == FormatPack {
		file = path + ".tmp" // the MCAP writer renames its own
	}
	s, err := newSink(file, w, sinkOptions{Format: opts.Format, Compression: opts.Compression, Writer: opts.Writer,
		KeepPacked: opts.KeepPacked})
	if err != nil {
		return nil, err
	}
	return &Writer{path: path, format: opts.Format, sink: s, types: map[topicKey]*writerTopic{},
		info: dumpinfo.Info{Writer: opts.Writer}}, nil
}

// sinkOptions say how newSink writes.
type sinkOptions struct {
	Format, Compression, Writer string
	KeepPacked                  bool
	SplitSize                   int64  // Rewrite's Split.Size: frames and chunks end near it
	Stamp                       *Stamp // Rewrite's Stamp: its seal (the operator's key), if any
}

// newSink makes the pack or MCAP writer of a Writer or of one output of
// Rewrite: to the file at path (a pack file exactly there; an MCAP file
// through path.tmp, renamed by its Close) or, when path is "", to w.
func newSink(path string, w io.Writer, o sinkOptions) (rewriteSink, error) {
	if o.Format == FormatMCAP {
		mo := mcap.Options{Library: o.Writer, KeepPacked: o.KeepPacked}
		switch o.Compression {
		case "lz4":
			mo.Compression = mcap.CompressionLZ4
		case "zstd":
			mo.Compression = mcap.CompressionZstd
		case "", "none":
		default:
			return nil, fmt.Errorf("dumpfile: compression %q: want none, lz4 or zstd", o.Compression)
		}
		if s := o.SplitSize; s > 0 {
			mo.ChunkSize = int(min(s/4, mcap.DefaultChunkSize)) // files end near the size
		}
		mo.Concurrency = mcap.ExportConcurrency(mo.Compression)
		mo.Seal = o.Stamp.sealer(evidence.FormatMCAP)
		if path == "" {
			return mcap.NewPackWriter(w, mo)
		}
		return mcap.CreatePackWriter(path, mcap.FileOptions{Options: mo})
	}
	po := pack.WriterOptions{Writer: o.Writer}
	switch o.Compression {
	case "lz4":
		po.Compression = pack.CompressLZ4
	case "zstd":
		po.Compression = pack.CompressZstd
	case "", "none":
	default:
		return nil, fmt.Errorf("dumpfile: compression %q: want none, lz4 or zstd", o.Compression)
	}
	if s := o.SplitSize; s > 0 {
		po.TargetFrameSize = int(min(s/4, pack.DefaultTargetFrameSize))
	}
	po.Seal = o.Stamp.sealer(evidence.FormatPack)
	if path == "" {
		return pack.NewStreamWriter(w, po)
	}
	return pack.Create(path, po)
}

func (w *Writer) label() string {
	if w.path == "" {
		return "output"
	}
	return w.path
}

// topic returns the state of topic name#channel, made on first use.
func (w *Writer) topic(name, channel string) *writerTopic {
	k := topicKey{name, channel}
	t := w.types[k]
	if t == nil {
		t = &writerTopic{}
		w.types[k] = t
		w.order = append(w.order, k)
	}
	return t
}

// SetType declares the type of topic ("name", or "name#channel" split at
// its last '#'): its message encoding and schema (ingest.Packed for a
// packed struct, protobuf with a FileDescriptorSet, JSON with or without
// a JSON Schema, ...), checked as the recorder checks a declared type
// (schema.Check: a layout compiles, a descriptor set holds the message).
// Given before the topic's first message it is the topic's type; given
// later, the messages written from then on have it (the file records the
// change). A topic never given one is raw bytes.
func (w *Writer) SetType(topic string, t ingest.Type) error {
	if w.done {
		return os.ErrClosed
	}
	if err := schema.Check(t); err != nil {
		return fmt.Errorf("dumpfile: %s: topic %s: %w", w.label(), topic, err)
	}
	name, channel := pack.SplitTopic(topic)
	wt := w.topic(name, channel)
	wt.declared, wt.changed = t, true
	return nil
}

// Write adds a message of topic ("name" or "name#channel") with its
// capture time timeNs and producer time genNs (0: unknown), ns since the
// epoch. Messages come in time order: one earlier than the message before
// is ErrTimeOrder (readers seek by time and merge files assuming it). The
// data is copied.
func (w *Writer) Write(topic string, timeNs, genNs int64, data []byte) error {
	name, channel := pack.SplitTopic(topic)
	return w.write(name, channel, nil, timeNs, genNs, data, nil)
}

// WriteMessage adds a message read from a Timeline (or a Source) with its
// name, channel, meta, times and type: the topic's type in the file
// follows the message's (a SetType of the topic is overridden).
func (w *Writer) WriteMessage(m *Message) error {
	return w.write(m.Name, m.Channel, m.Meta, m.TimeNs, m.GenNs, m.Data, m.Type)
}

func (w *Writer) write(name, channel string, meta []byte, timeNs, genNs int64, data []byte, typ *ingest.Type) error {
	if w.done {
		return os.ErrClosed
	}
	if w.n > 0 && timeNs < w.lastNs {
		return fmt.Errorf("%w: %s: topic %s at %d, after a message at %d", ErrTimeOrder, w.label(),
			mcap.TopicName(name, channel), timeNs, w.lastNs)
	}
	t := w.topic(name, channel)
	if typ == nil {
		typ = &t.declared
	}
	if typ != t.from || t.changed {
		if t.written == nil || !t.written.Equal(*typ) {
			if err := w.setType(name, channel, *typ, timeNs, t.written == nil); err != nil {
				return fmt.Errorf("dumpfile: %s: topic %s: %w", w.label(), mcap.TopicName(name, channel), err)
			}
			cp := *typ
			t.written = &cp
		}
		t.from, t.changed = typ, false
	}
	if err := w.sink.Add(name, channel, meta, genNs, timeNs, data); err != nil {
		return fmt.Errorf("dumpfile: %s: %w", w.label(), err)
	}
	if t.msgs == 0 {
		t.first = timeNs
	}
	t.msgs++
	t.bytes += uint64(len(data))
	t.last = timeNs
	w.lastNs = timeNs
	w.n++
	return nil
}

// setType records topic name#channel's type in the file from atNs on:
// a pack type section, an MCAP channel. first: the topic has no message
// yet.
func (w *Writer) setType(name, channel string, t ingest.Type, atNs int64, first bool) error {
	switch s := w.sink.(type) {
	case *pack.Writer:
		if t.IsZero() && first {
			return nil // raw bytes from the start: no type section
		}
		return s.SetTopicType(name, channel, t.OrRaw(), atNs)
	case *mcap.PackWriter:
		return s.DeclareTopic(mcap.Topic{Name: name, Channel: channel, Type: t})
	}
	return nil
}

// SetInfo gives the dump information Close records: its triggers, host,
// labels and window (StartNs, EndNs: the messages' span when 0). Close
// fills in each topic's accounting (d.Topics, when empty) and the writer.
func (w *Writer) SetInfo(d dumpinfo.Info) error {
	if w.done {
		return os.ErrClosed
	}
	writer := w.info.Writer
	w.info = d
	if w.info.Writer == "" {
		w.info.Writer = writer
	}
	return nil
}

// Close records the dump information and completes the file: a pack file
// gets its index and trailer, an MCAP file its summary; a file path is
// renamed from path.tmp. On error nothing is left at path.
func (w *Writer) Close() error {
	if w.done {
		return os.ErrClosed
	}
	d := w.info
	var first, last int64
	for _, k := range w.order {
		t := w.types[k]
		if t.msgs == 0 {
			continue
		}
		if last == 0 || t.first < first {
			first = t.first
		}
		last = max(last, t.last)
	}
	if d.Topics == nil {
		keys := append([]topicKey(nil), w.order...)
		sort.Slice(keys, func(i, j int) bool {
			return keys[i].name < keys[j].name || keys[i].name == keys[j].name && keys[i].channel < keys[j].channel
		})
		for _, k := range keys {
			t := w.types[k]
			if t.msgs == 0 {
				continue
			}
			typ := t.declared
			if t.written != nil {
				typ = *t.written
			}
			d.Topics = append(d.Topics, dumpinfo.TopicAccount{Topic: pack.Topic(k.name, k.channel), Type: typ.Schema.Name,
				Messages: t.msgs, Bytes: t.bytes, FirstNs: t.first, LastNs: t.last})
		}
	}
	if d.StartNs == 0 && d.EndNs == 0 {
		d.StartNs, d.EndNs = first, last
	}
	if err := w.sink.SetDumpInfo(d); err != nil {
		return errors.Join(fmt.Errorf("dumpfile: %s: %w", w.label(), err), w.Abort())
	}
	w.done = true
	if err := w.sink.Close(); err != nil {
		w.removeTmp()
		return fmt.Errorf("dumpfile: %s: %w", w.label(), err)
	}
	if w.path != "" && w.format == FormatPack {
		if err := os.Rename(w.path+".tmp", w.path); err != nil {
			w.removeTmp()
			return err
		}
	}
	return nil
}

// Abort gives the file up: nothing is left at path (a stream is left
// incomplete).
func (w *Writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	switch s := w.sink.(type) {
	case *mcap.PackWriter:
		return s.Abort()
	case *pack.Writer:
		s.Close()
		w.removeTmp()
	}
	return nil
}

func (w *Writer) removeTmp() {
	if w.path != "" && w.format == FormatPack {
		os.Remove(w.path + ".tmp")
	}
}
