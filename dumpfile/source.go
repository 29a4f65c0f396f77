package dumpfile

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/edr-lite/edr-lite/ingest"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// Source is one dump open for reading as pack-model messages, whatever its
// format: a pack file through pack.Reader, an MCAP file through
// mcap.PackReader (the inverse of the mapping MCAP dumps and exports are
// written with; see docs/mcap.md). Opening an MCAP file makes a first pass
// over it (mcap.Cursor: its chunks' time ranges, its channels and
// metadata; nothing kept per message).
//
// A Source is not safe for concurrent use: the offline tools read it from
// one goroutine.
type Source struct {
	Path   string
	Format string // FormatPack, FormatMCAP, FormatJPEGDir or FormatMP4

	pack   *pack.Reader
	mr     *mcap.Reader
	mp     *mcap.PackReader
	owned  bool
	info   dumpinfo.Info
	hasDI  bool
	topics []SourceTopic
	types  typeOf
	remove string // a salvaged copy Close removes (OpenSalvaged)
	st     stream // a camera file (media.go)
	notes  []string
	media  *MediaFacts  // a camera file: what reading it found (media.go)
	endNs  int64        // the stream's last message time
	dec    *canDecoding // its CAN frame topics decoded by --dbc (canlog_dbc.go)
}

// SourceTopic is one topic of a Source.
type SourceTopic struct {
	Name, Channel string
	// Type is the topic's type (message encoding and schema): the first
	// it has in the file (a pack file's type sections, an MCAP file's
	// channels); for a file without them (pack 1.0, MCAP of other
	// writers without schemas), raw bytes named by the dump information's
	// accounting, when it names one.
	Type ingest.Type
	// Types lists every type the topic has in the file, in order, with the
	// time each began (FromNs: the time the file records; 0 when it does
	// not say). More than one: a producer restarted with another type.
	Types    []TypeSpan
	Messages uint64
}

// TypeSpan is one type of a topic and when it began.
type TypeSpan struct {
	FromNs int64
	Type   ingest.Type
}

// String returns "name", or "name#channel" when there is a channel.
func (t *SourceTopic) String() string { return mcap.TopicName(t.Name, t.Channel) }

// Message is one pack-model message of a Source or of a Messages stream.
// Meta and Data alias the dump's mapping (or a decompression buffer): see
// where it comes from for how long they are valid.
type Message struct {
	Name, Channel string
	Meta          []byte
	GenNs         int64 // producer time as recorded (0 = unknown)
	DoneNs        int64 // capture time as recorded (0 = unknown)
	// TimeNs is the message's time: pack MessageTime, MCAP log_time.
	TimeNs int64
	Data   []byte // nil when the message has no data block
	// HasSeq says whether Seq is the producer's sequence number of the
	// message: an MCAP message's sequence, a pack message's seq field.
	HasSeq bool
	Seq    uint64
	// Type is the message's type (see SourceTopic.Type): never nil, the
	// same pointer for every message of a topic until its type changes.
	// Its Schema.Data aliases the dump's mapping: valid until Close.
	Type *ingest.Type
}

// Open detects the format of the dump at path and opens it. A file of a
// format Detect does not know is an error naming it and its first bytes.
func Open(path string) (*Source, error) {
	f, err := detectFile(path)
	if err != nil {
		return nil, err
	}
	s, err := f.open(path)
	if err != nil || s.dec != nil || f.Name == FormatCandump || f.Name == FormatASC {
		return s, err // a log decodes in its own first pass
	}
	if err := attachCAN(s, true); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// OpenBytes is Open over a dump held in memory; name labels errors and
// mopts bound the reading of an MCAP dump (chunk size). b must not change
// while the Source is in use.
func OpenBytes(name string, b []byte, mopts mcap.ReaderOptions) (*Source, error) {
	f, err := detect(name, b)
	if err != nil {
		return nil, err
	}
	if f.openBytes == nil {
		return nil, fmt.Errorf("%s: dumpfile: an %s file is read from a file by the edr-lite command, not from memory", name, f.title)
	}
	return f.openBytes(name, b, mopts)
}

func openPack(path string) (*Source, error) {
	r, err := pack.OpenWith(path, packOptions())
	if err != nil {
		return nil, err
	}
	s, err := FromPack(r)
	if err != nil {
		return nil, errors.Join(err, r.Close())
	}
	s.owned = true
	return s, nil
}

func openPackBytes(name string, b []byte, _ mcap.ReaderOptions) (*Source, error) {
	r, err := pack.NewBytesReader(name, b, pack.ReaderOptions{})
	if err != nil {
		return nil, err
	}
	s, err := FromPack(r)
	if err != nil {
		return nil, err
	}
	s.owned = true
	return s, nil
}

func openMCAP(path string) (*Source, error) {
	if skipDamaged.Load() != nil {
		tmp, err := salvageIfDamaged(path)
		if err != nil {
			return nil, err
		}
		if tmp != "" {
			s, err := openMCAPFile(tmp)
			if err != nil {
				os.Remove(tmp)
				return nil, err
			}
			s.Path, s.remove = path, tmp
			return s, nil
		}
	}
	return openMCAPFile(path)
}

func openMCAPFile(path string) (*Source, error) {
	r, err := mcap.Open(path, mcapOptions())
	if err != nil {
		return nil, err
	}
	s, err := fromMCAP(path, r)
	if err != nil {
		return nil, errors.Join(err, r.Close())
	}
	s.owned = true
	return s, nil
}

func openMCAPBytes(name string, b []byte, mopts mcap.ReaderOptions) (*Source, error) {
	r, err := mcap.NewReader(b, name, mopts)
	if err != nil {
		return nil, err
	}
	s, err := fromMCAP(name, r)
	if err != nil {
		return nil, err
	}
	s.owned = true
	return s, nil
}

// FromPack wraps an open pack reader (Close leaves it open). A type
// section that does not decode is an error naming the file and offset.
func FromPack(r *pack.Reader) (*Source, error) {
	s := &Source{Path: r.Path(), Format: FormatPack, pack: r}
	s.info, s.hasDI = r.DumpInfo()
	ts, err := r.Types()
	if err != nil {
		return nil, err
	}
	names := typesOf(s.info)
	s.types = newTypeOf(pack.NewTypeIndex(ts), names)
	for _, t := range r.Summary().Topics {
		st := SourceTopic{Name: t.Name, Channel: t.Channel, Messages: t.Messages}
		for _, tt := range s.types.idx.Topic(t.Name, t.Channel) {
			if n := len(st.Types); n == 0 || !st.Types[n-1].Type.Equal(tt.Type) {
				st.Types = append(st.Types, TypeSpan{FromNs: tt.FromNs, Type: tt.Type})
			}
		}
		if len(st.Types) == 0 {
			st.Types = []TypeSpan{{Type: *s.types.fallbackOf(t.Name, t.Channel)}}
		}
		st.Type = st.Types[0].Type
		s.topics = append(s.topics, st)
	}
	return s, nil
}

func fromMCAP(path string, r *mcap.Reader) (*Source, error) {
	mp, err := mcap.NewPackReader(r)
	if err != nil {
		return nil, err
	}
	s := &Source{Path: path, Format: FormatMCAP, mr: r, mp: mp}
	s.info, s.hasDI = mp.DumpInfo()
	names := typesOf(s.info)
	for _, t := range mp.Topics() {
		st := SourceTopic{Name: t.Name, Channel: t.Channel, Type: t.Type, Messages: t.Messages}
		// A raw channel without a name takes the accounting's.
		if st.Type.MessageEncoding == ingest.EncodingRaw && st.Type.Schema.Name == "" {
			st.Type.Schema.Name = names.of(t.Name, t.Channel)
		}
		st.Types = []TypeSpan{{Type: st.Type}}
		for i, ct := range mp.TopicTypes(t.Name, t.Channel) {
			if i > 0 { // MCAP channels do not say when they began
				st.Types = append(st.Types, TypeSpan{Type: *ct})
			}
		}
		s.topics = append(s.topics, st)
	}
	return s, nil
}

// accountTypes maps the topics of a dump's accounting to their types.
type accountTypes map[string]string

func typesOf(d dumpinfo.Info) accountTypes {
	types := accountTypes{}
	for _, a := range d.Topics {
		if a.Type != "" {
			types[a.Topic] = a.Type
		}
	}
	return types
}

// of looks a topic up as the accounting may spell it: "name#channel"
// (pack.Topic) or "name" / "name#channel" (the MCAP topic).
func (t accountTypes) of(name, channel string) string {
	if typ := t[pack.Topic(name, channel)]; typ != "" {
		return typ
	}
	return t[mcap.TopicName(name, channel)]
}

// Close closes the files the Source opened.
func (s *Source) Close() error {
	if !s.owned {
		return nil
	}
	s.owned = false
	var err error
	switch {
	case s.st != nil:
		err = s.st.close()
	case s.pack != nil:
		reportSkipped(s.Path, s.pack.Skipped())
		err = s.pack.Close()
	default:
		err = s.mr.Close()
	}
	if s.remove != "" {
		err = errors.Join(err, os.Remove(s.remove))
	}
	return err
}

// Pack returns the pack reader of a pack Source, else nil (also for a
// camera file: neither Pack nor MCAP).
func (s *Source) Pack() *pack.Reader { return s.pack }

// MCAP returns the pack-model reader of an MCAP Source, else nil.
func (s *Source) MCAP() *mcap.PackReader { return s.mp }

// DumpInfo returns the dump information (triggers, per-topic accounting)
// and whether the dump has any.
func (s *Source) DumpInfo() (dumpinfo.Info, bool) { return s.info, s.hasDI }

// Attachments returns the files stored with the dump, in file order: a
// pack file's attachment sections, an MCAP file's Attachment records (as
// pack attachments: times past 2262 the largest); none for a camera file.
// Data aliases the dump's mapping: valid until Close. An attachment that
// does not check out is an error naming the file and its offset.
func (s *Source) Attachments() ([]pack.Attachment, error) {
	switch {
	case s.pack != nil:
		return s.pack.Attachments()
	case s.mp != nil:
		as, err := s.mp.Attachments()
		if err != nil {
			return nil, err
		}
		out := make([]pack.Attachment, len(as))
		for i := range as {
			out[i] = mcap.PackAttachment(&as[i])
			out[i].Offset = as[i].Offset
		}
		return out, nil
	}
	return nil, nil
}

// Topics returns the dump's topics: pack in index order, MCAP in channel
// order.
func (s *Source) Topics() []SourceTopic { return s.topics }

// EndNs returns the latest message time of the dump, as far as it is
// known without reading it all: for pack the latest in its last frame, for
// MCAP the latest log_time. 0 when unknown.
func (s *Source) EndNs() int64 {
	if s.st != nil {
		return s.endNs
	}
	if s.mp != nil {
		return int64(min(s.mp.Info().EndTime, 1<<63-1))
	}
	r := s.pack
	offs := r.FrameOffsets()
	if len(offs) == 0 {
		return 0
	}
	defer r.Rewind()
	var f pack.Frame
	if r.SeekFrame(offs[len(offs)-1]) != nil || r.ReadMetaInto(&f) != nil {
		return 0
	}
	var last int64
	for i := 0; i < f.Len(); i++ {
		m := f.Message(i)
		last = max(last, MessageTime(&m, f.Time()))
	}
	return last
}

// InFileOrder calls fn for every message in file order: pack frames as
// stored, MCAP messages as written (a message's meta with it). m and its
// bytes are valid only until fn returns. An error from fn stops the walk
// and is returned.
func (s *Source) InFileOrder(fn func(m *Message) error) error {
	var m Message
	if d := s.dec; d != nil { // each frame, then the message --dbc decodes of it
		var buf []byte
		var dm Message
		user := fn
		fn = func(m *Message) error {
			ok := d.decode(m, &buf, &dm)
			if err := user(m); err != nil || !ok {
				return err
			}
			return user(&dm)
		}
	}
	if s.st != nil {
		s.st.rewind()
		for {
			ok, err := s.st.next(&m)
			if err != nil || !ok {
				return err
			}
			if err := fn(&m); err != nil {
				return err
			}
		}
	}
	if s.mp != nil {
		s.mp.FileOrder()
		for {
			ok, err := s.mp.Next()
			if err != nil || !ok {
				return err
			}
			mcapMessage(&m, s.mp.Message())
			if err := fn(&m); err != nil {
				return err
			}
		}
	}
	r := s.pack
	r.Rewind()
	var f pack.Frame
	for {
		if err := r.ReadInto(&f); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		for i := 0; i < f.Len(); i++ {
			packMessage(&m, &f, i, &s.types, r.FrameOffset())
			if err := fn(&m); err != nil {
				return err
			}
		}
	}
}

// packMessage fills m with message i of frame f, read at file offset off
// through types.
func packMessage(m *Message, f *pack.Frame, i int, types *typeOf, off int64) {
	pm := f.MessageAt(i) // in place: a message's fields are copied once
	m.Name, m.Channel, m.Meta = pm.Name, pm.Channel, pm.Meta
	m.GenNs, m.DoneNs, m.TimeNs = pm.GenTs, pm.DoneTs, MessageTime(pm, f.Time())
	m.HasSeq, m.Seq = pm.HasSeq, pm.Seq
	m.Type = types.at(pm.Name, pm.Channel, off)
	if m.Data = f.Data(i); m.Data == nil && pm.DataIndex != pack.NoData {
		m.Data = []byte{} // an empty data block
	}
}

func mcapMessage(m *Message, pm *mcap.PackMessage) {
	*m = Message{Name: pm.Name, Channel: pm.Channel, Meta: pm.Meta, GenNs: pm.GenTs, DoneNs: pm.DoneTs,
		TimeNs: pm.DoneTs, Data: pm.Data, HasSeq: pm.HasSeq, Seq: pm.Seq, Type: pm.Type}
}

// typeOf gives the messages of a pack file their types: from its type
// sections, else raw bytes named by the accounting (one pointer per topic,
// made once).
type typeOf struct {
	idx      *pack.TypeIndex
	names    accountTypes
	fallback map[topicKey]*ingest.Type

	// The types of the topics of the frame at cacheOff: a frame's
	// messages mostly share a few topics, and comparing their (interned)
	// names costs less than the index's map lookups per message.
	cacheOff int64
	cacheN   int
	cache    [8]struct {
		name, channel string
		typ           *ingest.Type
	}
}

type topicKey struct{ name, channel string }

func newTypeOf(idx *pack.TypeIndex, names accountTypes) typeOf {
	return typeOf{idx: idx, names: names, fallback: map[topicKey]*ingest.Type{}}
}

// at returns the type of topic name#channel in the frame at offset off.
func (t *typeOf) at(name, channel string, off int64) *ingest.Type {
	if off != t.cacheOff {
		t.cacheOff, t.cacheN = off, 0
	}
	for i := 0; i < t.cacheN; i++ { // interned: the same strings
		if c := &t.cache[i]; sameString(c.name, name) && sameString(c.channel, channel) {
			return c.typ
		}
	}
	for i := 0; i < t.cacheN; i++ {
		if c := &t.cache[i]; c.name == name && c.channel == channel {
			return c.typ
		}
	}
	typ := t.lookup(name, channel, off)
	if t.cacheN < len(t.cache) {
		t.cache[t.cacheN].name, t.cache[t.cacheN].channel, t.cache[t.cacheN].typ = name, channel, typ
		t.cacheN++
	}
	return typ
}

func (t *typeOf) lookup(name, channel string, off int64) *ingest.Type {
	if t.idx != nil {
		if tt := t.idx.At(name, channel, off); tt != nil {
			return &tt.Type
		}
	}
	return t.fallbackOf(name, channel)
}

func (t *typeOf) fallbackOf(name, channel string) *ingest.Type {
	if p := t.fallback[topicKey{name, channel}]; p != nil {
		return p
	}
	if t.fallback == nil {
		t.fallback = map[topicKey]*ingest.Type{}
	}
	p := new(ingest.Type)
	*p = ingest.Raw(t.names.of(name, channel))
	t.fallback[topicKey{name, channel}] = p
	return p
}
