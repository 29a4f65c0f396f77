package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/edr-lite/edr-lite/ingest"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/pack"
)

// message is a message line as Import decodes it.
type message struct {
	Seq    *uint64   `json:"seq"`
	Topic  *string   `json:"topic"`
	TS     *int64    `json:"ts"`
	GenTS  int64     `json:"gen_ts"`
	DoneTS *int64    `json:"done_ts"`
	SeqOf  *uint64   `json:"sequence"` // the producer's sequence number, when known
	Meta   []byte    `json:"meta"`
	Data   *b64Field `json:"data"`
	TypeID *string   `json:"type_id"` // "": untyped from here (before the topic's first type)
}

// Import reads a JSON-lines export from r and writes its messages,
// dump information, metadata and attachments to a pack Writer made by mk (given the
// header's writer name and creation time), which it closes. Messages are
// regrouped into frames by Writer.Add. Errors name the line and field; on
// error the output is incomplete and the caller should discard it.
//
// Re-exporting an import gives the same JSON lines, except for a message
// that had neither a producer nor a capture time (its ts came from its
// frame, which the import does not rebuild).
func Import(r io.Reader, mk func(pack.WriterOptions) (*pack.Writer, error)) (rep *Report, err error) {
	lr := &lineReader{br: bufio.NewReaderSize(r, 256<<10)}
	h, err := readHeader(lr)
	if err != nil {
		return nil, err
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
	types, err := indexTypes(lr, h)
	if err != nil {
		return nil, err
	}
	topics, err := indexTopics(lr, h, types)
	if err != nil {
		return nil, err
	}
	notes, err := addMetadata(lr, w, h)
	if err != nil {
		return nil, err
	}
	for i, a := range h.Attachments {
		err := w.AddAttachment(pack.Attachment{Name: a.Name, MediaType: a.MediaType, LogNs: a.LogNs, CreateNs: a.CreateNs, Data: a.Data})
		if err != nil {
			return nil, lr.errorf("header: attachments[%d]: %v", i, err)
		}
	}
	h.Attachments = nil // written: their bytes need not stay
	rep = &Report{Topics: len(h.Topics), Notes: notes}
	if err := addMessages(lr, w, topics, types, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// lineReader reads an export line by line and numbers the lines for
// errors.
type lineReader struct {
	br  *bufio.Reader
	n   int    // lines read
	buf []byte // the current line
}

// next returns the next line without its line ending, or io.EOF. The line
// is valid until the next call. A last line without a newline counts.
// A line longer than MaxLineBytes is refused with its line number instead
// of being gathered until memory runs out.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	for {
		frag, err := lr.br.ReadSlice('\n')
		if len(lr.buf)+len(frag) > MaxLineBytes {
			return nil, fmt.Errorf("%w: line %d: longer than %d bytes (a message's base64 data is at most that)", ErrFormat, lr.n+1, MaxLineBytes)
		}
		if n := len(lr.buf) + len(frag); n > cap(lr.buf) {
			lr.grow(n)
		}
		lr.buf = append(lr.buf, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(lr.buf) > 0 {
			err = nil
		}
		if err != nil {
			return nil, err
		}
		lr.n++
		return bytes.TrimRight(lr.buf, "\r\n"), nil
	}
}

// MaxLineBytes bounds one line of an export: 256 MiB, room for a 190 MiB
// message in base64.
const MaxLineBytes = 256 << 20

// keepLineBytes is the longest line buffer kept from one line to the
// next: a longer one is let go once its line is decoded (release), so a
// message's text and the copies the Writer makes of its data are not all
// held at once.
const keepLineBytes = 1 << 20

// grow makes room for a line of n bytes: doubling, and past
// keepLineBytes the smaller buffer is returned to the system at once
// (debug.FreeOSMemory), so that a long line holds about its own size, not
// its size plus the buffers it outgrew (a few cycles of garbage
// collection over a heap of a line: cheap, for long lines only).
func (lr *lineReader) grow(n int) {
	nb := make([]byte, len(lr.buf), max(n, 2*cap(lr.buf)))
	copy(nb, lr.buf)
	big := cap(lr.buf) > keepLineBytes
	lr.buf = nb
	if big {
		debug.FreeOSMemory()
	}
}

// release lets go of the line buffer when it grew past keepLineBytes. The
// line last returned is invalid afterwards.
func (lr *lineReader) release() {
	if cap(lr.buf) > keepLineBytes {
		lr.buf = nil
	}
}

// errorf returns an ErrFormat naming the line read last.
func (lr *lineReader) errorf(format string, a ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrFormat, lr.n, fmt.Sprintf(format, a...))
}

// readHeader reads the first line: a Header of this format and version.
func readHeader(lr *lineReader) (*Header, error) {
	line, err := lr.next()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: empty input (no header line)", ErrFormat)
	}
	if err != nil {
		return nil, err
	}
	var h Header
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, lr.errorf("header: %v", err)
	}
	if h.Format != FormatName {
		return nil, lr.errorf("header: format %q, want %q", h.Format, FormatName)
	}
	if h.Version != Version {
		return nil, lr.errorf("header: version %d not supported (want %d)", h.Version, Version)
	}
	return &h, nil
}

// indexTypes checks the header's type table (each type valid, its id its
// content ID, listed once) and maps ids to types.
func indexTypes(lr *lineReader, h *Header) (map[string]ingest.Type, error) {
	types := map[string]ingest.Type{}
	for i := range h.Types {
		e := &h.Types[i]
		t := e.typ()
		if err := t.Validate(); err != nil {
			return nil, lr.errorf("header: types[%d]: %v", i, err)
		}
		if id := t.ID().String(); id != e.ID {
			return nil, lr.errorf("header: types[%d]: id %q, but the type's content ID is %s", i, e.ID, id)
		}
		if _, dup := types[e.ID]; dup {
			return nil, lr.errorf("header: types[%d]: id %s listed twice", i, e.ID)
		}
		types[e.ID] = t
	}
	return types, nil
}

// importTopic is a header topic and the type it has in the output so far.
type importTopic struct {
	*Topic
	typ     ingest.Type // its type from the header (TypeID), zero when none
	started bool        // its type was set on the Writer
}

// indexTopics maps the header's topic keys to its topics, which must be
// named and listed once, with a type from the table if they name one.
func indexTopics(lr *lineReader, h *Header, types map[string]ingest.Type) (map[string]*importTopic, error) {
	topics := map[string]*importTopic{}
	for i := range h.Topics {
		t := &h.Topics[i]
		if t.Name == "" || t.Topic == "" {
			return nil, lr.errorf("header: topics[%d]: empty name or topic", i)
		}
		if topics[t.Topic] != nil {
			return nil, lr.errorf("header: topics[%d]: topic %q listed twice", i, t.Topic)
		}
		it := &importTopic{Topic: t}
		if t.TypeID != "" {
			typ, ok := types[t.TypeID]
			if !ok {
				return nil, lr.errorf("header: topics[%d]: type_id %s is not in the types", i, t.TypeID)
			}
			it.typ = typ
		}
		topics[t.Topic] = it
	}
	return topics, nil
}

// addMetadata writes the header's dump information (which must decode as
// a dumpinfo.Info; it is written as it came) and its other metadata
// sections, by name. A seal or provenance (evidence.Stamped: in an export
// made before Export left them out) is left out with a note: it describes
// the file the export was made from, and says nothing true of the new one.
func addMetadata(lr *lineReader, w *pack.Writer, h *Header) (notes []string, err error) {
	if len(h.DumpInfo) > 0 && string(h.DumpInfo) != "null" {
		if _, err := dumpinfo.Decode(h.DumpInfo); err != nil {
			return nil, lr.errorf("header: dump_info: %v", err)
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
	var stamps []string
	for _, n := range names {
		if n == dumpinfo.MetadataName {
			return nil, lr.errorf("header: metadata %q belongs in dump_info", n)
		}
		if evidence.Stamped(n) {
			stamps = append(stamps, n)
			continue
		}
		if err := w.AddMetadata(n, h.Metadata[n]); err != nil {
			return nil, err
		}
	}
	if len(stamps) > 0 {
		notes = append(notes, fmt.Sprintf("left out metadata %s: the seal and provenance of the file the export was made from say nothing true of the new dump", strings.Join(stamps, ", ")))
	}
	return notes, nil
}

// addMessages reads the message lines to the end and adds each to w,
// counting them in rep.
func addMessages(lr *lineReader, w *pack.Writer, topics map[string]*importTopic, types map[string]ingest.Type, rep *Report) error {
	var meta []byte
	for {
		line, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var m message // fresh: absent fields stay nil
		t, err := m.parse(lr, line, rep.Messages, topics)
		if err != nil {
			return err
		}
		done := *m.TS
		if m.DoneTS != nil {
			done = *m.DoneTS
		}
		var d []byte // nil: no data block
		if m.Data != nil {
			if d, err = m.Data.decode(); err != nil {
				return lr.errorf("data: %v", err)
			}
		}
		meta = append(meta[:0], m.Meta...)
		// The topic's type: from the header before its first message,
		// from the line where it changes.
		switch {
		case m.TypeID == nil:
		case *m.TypeID == "": // untyped: no type section before it
			t.typ, t.started = ingest.Type{}, false
		default:
			typ, ok := types[*m.TypeID]
			if !ok {
				return lr.errorf("type_id %s is not in the header's types", *m.TypeID)
			}
			t.typ, t.started = typ, false
		}
		if !t.started && t.typ.MessageEncoding != "" {
			if err := w.SetTopicType(t.Name, t.Channel, t.typ, done); err != nil {
				return fmt.Errorf("line %d: %w", lr.n, err)
			}
		}
		t.started = true
		if m.SeqOf != nil {
			err = w.AddSeq(t.Name, t.Channel, meta, m.GenTS, done, *m.SeqOf, d)
		} else {
			err = w.Add(t.Name, t.Channel, meta, m.GenTS, done, d)
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", lr.n, err)
		}
		rep.Messages++
		rep.Bytes += uint64(len(d))
		lr.release() // d aliased the line: a long one need not outlive its message
	}
}

// parse decodes line as message number seq, checks its required fields
// and returns its topic.
func (m *message) parse(lr *lineReader, line []byte, seq uint64, topics map[string]*importTopic) (*importTopic, error) {
	if len(line) == 0 {
		return nil, lr.errorf("empty line")
	}
	if err := json.Unmarshal(line, m); err != nil {
		return nil, lr.errorf("%v", err)
	}
	switch {
	case m.Seq == nil:
		return nil, lr.errorf("no seq")
	case *m.Seq != seq:
		return nil, lr.errorf("seq %d, want %d (lines missing or out of order)", *m.Seq, seq)
	case m.Topic == nil:
		return nil, lr.errorf("no topic")
	case m.TS == nil:
		return nil, lr.errorf("no ts")
	}
	t := topics[*m.Topic]
	if t == nil {
		return nil, lr.errorf("topic %q is not in the header", *m.Topic)
	}
	return t, nil
}
