package dumpfile

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// Topic is one topic's figures.
type Topic struct {
	Name string `json:"name"`
	// Type is the type (schema) name, Encoding the message encoding and
	// SchemaEncoding the schema's (see ingest.Type): the topic's first
	// type in the file; for a file without types (pack 1.0), the
	// accounting's type name, opaque bytes.
	Type           string `json:"type,omitempty"`
	Encoding       string `json:"encoding,omitempty"`
	SchemaEncoding string `json:"schema_encoding,omitempty"`
	// TypeID is the type's content ID (ingest.Type.ID, hex): two types
	// with the same names and different schemas differ by it.
	TypeID string `json:"type_id,omitempty"`
	// TypeChanges lists the types the topic changed to in the dump (its
	// producer restarted with another schema), with when.
	TypeChanges []TypeChange `json:"type_changes,omitempty"`
	Messages    uint64       `json:"messages"`
	Bytes       uint64       `json:"bytes"`
	FirstNs     int64        `json:"first_ns,omitempty"`
	LastNs      int64        `json:"last_ns,omitempty"`
	Overwritten uint64       `json:"overwritten"`
	Oversize    uint64       `json:"oversize"`
	SkippedBusy uint64       `json:"skipped_busy"`
	// LostAtSource: lost before reaching the recorder (shm overwrite,
	// kernel drop), as the source reported them.
	LostAtSource uint64 `json:"lost_at_source"`
	// WindowFromNs and WindowToNs are the window asked for the topic
	// (FirstNs, LastNs what it holds); StartShort and EndShort why it
	// holds less, when known (dumpinfo.Short*). From the dump information;
	// absent in older dumps.
	WindowFromNs int64  `json:"window_from_ns,omitempty"`
	WindowToNs   int64  `json:"window_to_ns,omitempty"`
	StartShort   string `json:"start_short,omitempty"`
	EndShort     string `json:"end_short,omitempty"`
	// Cut: in a cut of other dumps, the topic's messages left out.
	Cut uint64 `json:"cut,omitempty"`
	// Order is dumpinfo.OrderEvent when the dump wrote the topic in
	// event-time order; Late and EventTimeMissing count the messages it
	// wrote in arrival order instead (dumpinfo.TopicAccount).
	Order            string `json:"order,omitempty"`
	Late             uint64 `json:"late,omitempty"`
	EventTimeMissing uint64 `json:"event_time_missing,omitempty"`
	// EventTime and EventTimeUnit: the field the dump ordered the topic by;
	// EventFirstNs and EventLastNs the span of the event times it holds.
	EventTime     string `json:"event_time,omitempty"`
	EventTimeUnit string `json:"event_time_unit,omitempty"`
	EventFirstNs  int64  `json:"event_first_ns,omitempty"`
	EventLastNs   int64  `json:"event_last_ns,omitempty"`
	// CAN is, for a CAN frame topic decoded by a DBC (when recorded, or
	// by --dbc: SetDBCs), what the DBC made of its frames.
	CAN *dumpinfo.CANAccount `json:"can,omitempty"`
}

// TypeChange is a topic's change of type inside a dump.
type TypeChange struct {
	AtNs           int64  `json:"at_ns"` // the first message of the new type (0 when the file does not say)
	Encoding       string `json:"encoding"`
	Type           string `json:"type,omitempty"`
	SchemaEncoding string `json:"schema_encoding,omitempty"`
	TypeID         string `json:"type_id"`
}

// setType records t as the topic's type (its first), or as a change.
func (t *Topic) setType(typ ingest.Type, atNs int64) {
	typ = typ.OrRaw()
	id := typ.ID().String()
	if t.Encoding == "" {
		t.Type, t.Encoding, t.SchemaEncoding, t.TypeID = typ.Schema.Name, typ.MessageEncoding, typ.Schema.Encoding, id
		return
	}
	last := t.TypeID
	if n := len(t.TypeChanges); n > 0 {
		last = t.TypeChanges[n-1].TypeID
	}
	if id != last {
		t.TypeChanges = append(t.TypeChanges, TypeChange{AtNs: atNs, Encoding: typ.MessageEncoding, Type: typ.Schema.Name,
			SchemaEncoding: typ.Schema.Encoding, TypeID: id})
	}
}

// Info summarises one dump.
type Info struct {
	Path        string   `json:"path"`
	Format      string   `json:"format"`
	Size        int64    `json:"size"`
	Messages    uint64   `json:"messages"`
	Bytes       uint64   `json:"bytes"`
	StartNs     int64    `json:"start_ns"`
	EndNs       int64    `json:"end_ns"`
	Indexed     bool     `json:"indexed"`
	Frames      int      `json:"frames,omitempty"`
	Chunks      int      `json:"chunks,omitempty"`
	Compression []string `json:"compression,omitempty"`  // codecs in use ("none", "lz4", "zstd")
	StoredBytes int64    `json:"stored_bytes,omitempty"` // pack: frame data as stored
	RawBytes    int64    `json:"raw_bytes,omitempty"`    // pack: the same, uncompressed
	Writer      string   `json:"writer,omitempty"`
	// HeldStartNs and HeldEndNs are the capture times of the first and
	// last message the dump holds (StartNs, EndNs: the window asked).
	HeldStartNs int64              `json:"held_start_ns,omitempty"`
	HeldEndNs   int64              `json:"held_end_ns,omitempty"`
	Topics      []Topic            `json:"topics"`
	Triggers    []dumpinfo.Trigger `json:"triggers"`
	Metadata    []string           `json:"metadata,omitempty"`
	// Attachments lists the files stored with the dump (pack attachment
	// sections, MCAP Attachment records), in file order: the first
	// MaxInfoAttachments of AttachmentCount.
	Attachments     []AttachmentInfo `json:"attachments,omitempty"`
	AttachmentCount int              `json:"attachment_count,omitempty"`
	// Cut says the dump is a cut of other dumps (edr-lite filter, split):
	// of which, over which window, and what was left out.
	Cut *dumpinfo.Cut `json:"cut,omitempty"`
	// Skipped: a camera input's files left out (not JPEGs, no time), one
	// line each naming the file and why.
	Skipped []string `json:"skipped,omitempty"`
	// Damaged: a camera input's files that are damaged (a JPEG or an MP4
	// cut short), one line each naming the file and what was read of it.
	Damaged []string `json:"damaged,omitempty"`
	// Damage is set for a file that cannot be read as it is (truncated,
	// damaged): an MCAP file's figures then count what a salvaged copy
	// holds (mcap.Recover), a pack file's what its scan read before the
	// damage, and Damage says where it is and what could not be read.
	Damage *Damage `json:"damage,omitempty"`
}

// AttachmentInfo describes one attachment of a dump (Source.Attachments
// gives its bytes).
type AttachmentInfo struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type,omitempty"`
	Size      int64  `json:"size"`
	LogNs     int64  `json:"log_ns,omitempty"`    // the time it belongs to
	CreateNs  int64  `json:"create_ns,omitempty"` // when it was made
}

// MaxInfoAttachments bounds the attachments Info lists (a summary; list
// attachments gives them all).
const MaxInfoAttachments = 1000

// setAttachments lists as in the Info (the first MaxInfoAttachments).
func (in *Info) setAttachments(as []pack.Attachment) {
	in.AttachmentCount = len(as)
	in.Attachments = nil
	for _, a := range as[:min(len(as), MaxInfoAttachments)] {
		in.Attachments = append(in.Attachments, AttachmentInfo{Name: a.Name, MediaType: a.MediaType, Size: a.Size, LogNs: a.LogNs, CreateNs: a.CreateNs})
	}
}

// Msg is one message of a walk.
type Msg struct {
	Topic  string
	TimeNs int64 // capture time (pack done_ts, MCAP log_time)
	GenNs  int64 // producer time, 0 when unknown
	Data   []byte
	// Type is the message's type as the file stores it: a pack file's
	// (SourceTopic.Type), an MCAP channel's message encoding and schema
	// as they are (a transcoded packed topic is json there). Never nil.
	Type *ingest.Type
}

// rawType is the type of messages of a channel the file does not list.
var rawType = ingest.Raw("")

// ReadInfo summarises the dump at path.
func ReadInfo(path string) (*Info, error) {
	f, err := detectFile(path)
	if err != nil {
		return nil, err
	}
	in, err := f.info(path)
	if err != nil || f.Name == FormatCandump || f.Name == FormatASC {
		return in, err // a log decodes in its own first pass
	}
	if in.Damage != nil { // summarised as far as it reads: its frames are not decoded
		if o := canDBCs.Load(); o != nil {
			o.report(path, "damaged: its CAN frames are not decoded (edr-lite recover it first)")
		}
		return in, nil
	}
	return in, in.addDecoded(path)
}

// MessageTime is the time edr-lite orders a pack message by: its capture
// time (done_ts), else its producer time (gen_ts), else the frame time.
func MessageTime(m *pack.Message, frameNs int64) int64 { return pack.MessageTime(m, frameNs) }

func packInfo(path string) (*Info, error) {
	r, err := pack.OpenWith(path, packOptions())
	if err != nil {
		return nil, err
	}
	defer r.Close()
	d, hasDI := r.DumpInfo()
	types, err := r.Types()
	if err != nil {
		return nil, err
	}
	atts, err := r.Attachments()
	if err != nil {
		return nil, err
	}
	in := packInfoOf(path, r.Summary(), r.Codecs(), d, hasDI, types)
	in.setAttachments(atts)
	in.Damage = packDamage(r, in.Size)
	return in, nil
}

// packDamage says where the scan of a pack file without an index stopped
// (a cut or damaged file) and what it could not read after that; nil when
// the file is indexed or its scan read it to the end.
func packDamage(r *pack.Reader, size int64) *Damage {
	err := r.ScanError()
	if err == nil {
		return nil
	}
	d := &Damage{Reason: err.Error(), Truncated: errors.Is(err, pack.ErrTruncated)}
	var ce *pack.CorruptError
	if errors.As(err, &ce) {
		d.Offset, d.Reason = ce.Offset, ce.Reason
		d.LostBytes = max(size-ce.Offset, 0)
	}
	return d
}

// packInfoOf summarises a pack dump from its summary, codecs, dump
// information and type sections, however they were read (the file's
// index, a stream).
func packInfoOf(path string, s pack.Summary, cs pack.CodecStats, d dumpinfo.Info, hasDI bool, types []pack.TopicType) *Info {
	in := &Info{Path: path, Format: FormatPack, Size: s.Size, Messages: s.Messages, StartNs: s.FirstNs,
		EndNs: s.LastNs, Indexed: s.Indexed, Frames: s.Frames, Writer: s.Header.Writer, Metadata: s.Metadata,
		Topics: []Topic{}, Triggers: []dumpinfo.Trigger{}}
	for c, n := range cs.Frames {
		if n > 0 {
			in.Compression = append(in.Compression, c.String())
		}
	}
	sort.Strings(in.Compression)
	in.StoredBytes, in.RawBytes = cs.StoredBytes, cs.RawBytes
	x := pack.NewTypeIndex(types)
	for _, t := range s.Topics {
		tp := Topic{Name: topicName(t.Topic), Messages: t.Messages, Bytes: t.Bytes, FirstNs: t.FirstNs, LastNs: t.LastNs}
		for _, tt := range x.Topic(t.Name, t.Channel) {
			tp.setType(tt.Type, tt.FromNs)
		}
		in.Topics = append(in.Topics, tp)
		in.Bytes += t.Bytes
	}
	if hasDI {
		in.addDumpInfo(d)
	}
	for i := range in.Topics { // untyped (pack 1.0): raw bytes, named by the accounting
		if t := &in.Topics[i]; t.Encoding == "" {
			t.setType(ingest.Raw(t.Type), 0)
		}
	}
	sort.SliceStable(in.Topics, func(i, j int) bool { return in.Topics[i].Name < in.Topics[j].Name })
	in.setHeld()
	return in
}

// setHeld sets the held window from the topics' first and last messages.
func (in *Info) setHeld() {
	for _, t := range in.Topics {
		if t.Messages == 0 || t.FirstNs == 0 {
			continue
		}
		if in.HeldStartNs == 0 || t.FirstNs < in.HeldStartNs {
			in.HeldStartNs = t.FirstNs
		}
		in.HeldEndNs = max(in.HeldEndNs, t.LastNs)
	}
}

// addDumpInfo merges a dump's information into in: its window and writer,
// per-topic types and losses (a topic with nothing in the window still gets
// its accounting), and its triggers.
func (in *Info) addDumpInfo(d dumpinfo.Info) {
	if d.StartNs != 0 {
		in.StartNs, in.EndNs = d.StartNs, d.EndNs
	}
	if d.Writer != "" {
		in.Writer = d.Writer
	}
	byName := map[string]int{}
	for i, t := range in.Topics {
		byName[t.Name] = i
	}
	for _, a := range d.Topics {
		i, ok := byName[topicName(a.Topic)]
		if !ok {
			byName[topicName(a.Topic)] = len(in.Topics)
			i = len(in.Topics)
			in.Topics = append(in.Topics, Topic{Name: topicName(a.Topic)})
		}
		t := &in.Topics[i]
		if a.Type != "" && t.Encoding == "" { // the file's types come first
			t.Type = a.Type
		}
		t.Overwritten, t.Oversize, t.SkippedBusy = a.Overwritten, a.Oversize, a.SkippedBusy
		t.LostAtSource, t.Cut = a.LostAtSource, a.Cut
		t.Order, t.Late, t.EventTimeMissing = a.Order, a.Late, a.EventTimeMissing
		t.EventTime, t.EventTimeUnit = a.EventTime, a.EventTimeUnit
		t.EventFirstNs, t.EventLastNs = a.EventFirstNs, a.EventLastNs
		t.WindowFromNs, t.WindowToNs, t.StartShort, t.EndShort = a.WindowFromNs, a.WindowToNs, a.StartShort, a.EndShort
		t.CAN = a.CAN
		if a.FirstNs != 0 {
			t.FirstNs, t.LastNs = a.FirstNs, a.LastNs
		}
	}
	in.Triggers = append(in.Triggers, d.Triggers...)
	in.Cut = d.Cut
}

// mcapInfo summarises an MCAP file; one that cannot be read as it is
// (truncated, damaged) is summarised from a salvaged copy, with Damage set.
func mcapInfo(path string) (*Info, error) {
	in, err := mcapInfoOf(path)
	var ce *mcap.CorruptError
	if err == nil || !errors.As(err, &ce) {
		return in, err
	}
	tmp, damage, rerr := salvageMCAP(path, err)
	if rerr != nil {
		return nil, err
	}
	defer os.Remove(tmp)
	in, serr := mcapInfoOf(tmp)
	if serr != nil {
		return nil, err
	}
	st, serr := os.Stat(path)
	if serr != nil {
		return nil, serr
	}
	in.Path, in.Size, in.Indexed, in.Chunks, in.Compression, in.Damage = path, st.Size(), false, 0, nil, damage
	return in, nil
}

func mcapInfoOf(path string) (*Info, error) {
	r, err := mcap.Open(path, mcapOptions())
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// Indexed: a summary section the readers can use without reading the
	// data. Scan still walks the data for exact bytes per channel.
	sum, err := r.Info()
	if err != nil {
		return nil, err
	}
	mi := sum
	if !sum.Scanned {
		if mi, err = r.Scan(); err != nil {
			return nil, err
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	in := &Info{Path: path, Format: FormatMCAP, Size: st.Size(), Messages: mi.Messages, StartNs: int64(mi.StartTime),
		EndNs: int64(mi.EndTime), Indexed: !sum.Scanned, Chunks: mi.Chunks, Writer: mi.Library,
		Topics: []Topic{}, Triggers: []dumpinfo.Trigger{}}
	for name := range mi.Compression {
		if name == "" {
			name = "none"
		}
		in.Compression = append(in.Compression, name)
	}
	sort.Strings(in.Compression)
	rows := map[string]int{}
	for i := range mi.Channels {
		c := &mi.Channels[i]
		// Channels of one topic (its type changed) are one row; the
		// types are as the file stores them.
		j, ok := rows[c.Topic]
		if !ok {
			j = len(in.Topics)
			rows[c.Topic] = j
			in.Topics = append(in.Topics, Topic{Name: c.Topic})
		}
		t := &in.Topics[j]
		t.Messages += c.Messages
		t.Bytes += c.Bytes
		t.setType(*mcap.ChannelType(c), 0)
		in.Bytes += c.Bytes
	}
	for _, md := range mi.Metadata {
		in.Metadata = append(in.Metadata, md.Name)
	}
	atts, err := r.Attachments()
	if err != nil {
		return nil, err
	}
	pas := make([]pack.Attachment, len(atts))
	for i := range atts {
		pas[i] = mcap.PackAttachment(&atts[i])
	}
	in.setAttachments(pas)
	d, ok, err := mcap.ReadDumpInfo(mi.Metadata)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ok {
		in.addDumpInfo(d)
	}
	sort.SliceStable(in.Topics, func(i, j int) bool { return in.Topics[i].Name < in.Topics[j].Name })
	in.setHeld()
	if in.HeldStartNs == 0 && in.Messages > 0 {
		// another writer's file: no per-topic accounting, so the span of
		// the messages held is the file's first to last log time
		in.HeldStartNs, in.HeldEndNs = int64(min(mi.StartTime, 1<<63-1)), int64(min(mi.EndTime, 1<<63-1))
	}
	return in, nil
}

// topicName renders a pack topic for display: "name" when the channel is
// empty, else "name#channel".
func topicName(t string) string { return strings.TrimSuffix(t, "#") }

// Walk calls fn for every message of the dump at path, in file order. An
// error from fn stops the walk and is returned.
func Walk(path string, fn func(m *Msg) error) error {
	f, err := detectFile(path)
	if err != nil {
		return err
	}
	return f.walk(path, fn)
}

func walkMCAP(path string, fn func(m *Msg) error) error {
	if canDBCs.Load() != nil { // decoding CAN frames: the pack model's messages (a packed topic as packed)
		s, err := openMCAP(path)
		if err != nil {
			return err
		}
		if err := attachCAN(s, false); err != nil || s.dec != nil {
			defer s.Close()
			if err != nil {
				return err
			}
			return walkSource(s, fn)
		}
		s.Close()
	}
	if skipDamaged.Load() != nil {
		if tmp, err := salvageIfDamaged(path); err != nil {
			return err
		} else if tmp != "" {
			defer os.Remove(tmp)
			path = tmp
		}
	}
	r, err := mcap.Open(path, mcapOptions())
	if err != nil {
		return err
	}
	defer r.Close()
	info, err := r.Info()
	if err != nil {
		return err
	}
	types := map[uint16]*ingest.Type{}
	for i := range info.Channels {
		types[info.Channels[i].ID] = mcap.ChannelType(&info.Channels[i])
	}
	var m Msg
	return r.Messages(func(c *mcap.Channel, mm *mcap.Message) error {
		m = Msg{Topic: c.Topic, TimeNs: int64(mm.LogTime), GenNs: int64(mm.PublishTime), Data: mm.Data, Type: types[c.ID]}
		if m.Type == nil {
			m.Type = &rawType
		}
		return fn(&m)
	})
}

func walkPack(path string, fn func(m *Msg) error) error {
	r, err := pack.OpenWith(path, packOptions())
	if err != nil {
		return err
	}
	defer r.Close()
	s, err := FromPack(r)
	if err != nil {
		return err
	}
	defer func() { reportSkipped(path, r.Skipped()) }()
	if err := attachCAN(s, false); err != nil {
		return err
	}
	return walkSource(s, fn)
}

// walkSource calls fn for every message of s in file order.
func walkSource(s *Source, fn func(m *Msg) error) error {
	var m Msg
	return s.InFileOrder(func(pm *Message) error {
		m = Msg{Topic: topicName(pack.Topic(pm.Name, pm.Channel)), TimeNs: pm.TimeNs, GenNs: pm.GenNs, Data: pm.Data, Type: pm.Type}
		return fn(&m)
	})
}
