package dumpfile

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/edr-lite/edr-lite/can"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// DBCs says which DBC decodes the CAN frame topics of which bus, for the
// files this package opens once SetDBCs is called (the offline verbs'
// --dbc; docs/can.md, "DBC"). A bus is named as a candump export names
// it: its frame topic less "can/" ("can0"; a per-ID topic's parent; with
// a channel, "can0#CHANNEL"). Make it with &DBCs{...}; it is safe for
// concurrent use once set.
type DBCs struct {
	// All decodes every bus Buses does not name; nil: only those.
	All *can.DBC
	// Buses decodes the buses named.
	Buses map[string]*can.DBC
	// Report, when set, is told once what decoding a file could not do
	// (a DBC message's topic the file holds already: given as recorded,
	// not decoded again), one sentence naming the file and topic.
	Report func(path, note string)

	mu     sync.Mutex
	found  map[string]bool // buses of the files opened, by name
	frames bool            // a file opened had a CAN frame topic
	said   map[string]bool
}

// canDBCs is what SetDBCs set, nil for none.
var canDBCs atomic.Pointer[DBCs]

// SetDBCs makes the files opened from now on (Open, OpenCANLog, Walk,
// ReadInfo) give their CAN frame topics (edr.can.Frame, edr.can.FDFrame)
// decoded too, as a bus recording with a DBC does: after each frame a DBC
// message has the ID of, that message decoded on the topic can/BUS/NAME
// (a per-ID topic's bus; the frame's times; typed by the message). A
// frame topic's accounting then says what the DBC made of its frames
// (dumpinfo.CANAccount). nil stops it. It is what the offline verbs'
// --dbc sets, like SetMaxMemory; the decoding is one path whatever the
// file (a candump or ASC log, a pack or MCAP dump).
func SetDBCs(d *DBCs) { canDBCs.Store(d) }

// SetDBC is SetDBCs decoding every bus by d (nil stops it).
func SetDBC(d *can.DBC) {
	if d == nil {
		SetDBCs(nil)
		return
	}
	SetDBCs(&DBCs{All: d})
}

// dbcOf returns the DBC of bus, noting that a file had it.
func (o *DBCs) dbcOf(bus string) *can.DBC {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.found == nil {
		o.found = map[string]bool{}
	}
	o.found[bus], o.frames = true, true
	if d := o.Buses[bus]; d != nil {
		return d
	}
	return o.All
}

// Unfound returns the buses of Buses that no file opened since SetDBCs
// had, sorted, the buses the files had, and whether any had a CAN frame
// topic: what a verb warns about once it is done.
func (o *DBCs) Unfound() (missing, found []string, frames bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for b := range o.Buses {
		if !o.found[b] {
			missing = append(missing, b)
		}
	}
	for b := range o.found {
		found = append(found, b)
	}
	sort.Strings(missing)
	sort.Strings(found)
	return missing, found, o.frames
}

func (o *DBCs) report(path, note string) {
	o.mu.Lock()
	say := !o.said[path+"\x00"+note]
	if say {
		if o.said == nil {
			o.said = map[string]bool{}
		}
		o.said[path+"\x00"+note] = true
	}
	o.mu.Unlock()
	if say && o.Report != nil {
		o.Report(path, note)
	}
}

// canDecoding decodes the CAN frame topics of one file by DBCs: the one
// path of --dbc (a log's stream, a dump's Source, a walk). Not safe for
// concurrent use (a Source is read from one goroutine).
type canDecoding struct {
	o      *DBCs
	path   string
	have   map[topicKey]bool       // the file's own topics: not decoded again
	frames map[topicKey]*decFrames // by frame topic; nil: not decoded
	order  []*decFrames            // decoded frame topics, in order met
	topics map[decKey]*decTopic
	list   []*decTopic // in order met
	last   topicKey    // frameFor's last answer
	lastFr *decFrames
	lastOK bool
}

// decFrames is one decoded frame topic.
type decFrames struct {
	name, channel string
	prefix        string // of its decoded topics: its bus's topic + "/"
	dbc           *can.DBC
	tally         can.Tally
}

type decKey struct {
	prefix, channel string
	m               *can.Message
}

// decTopic is one DBC message's topic.
type decTopic struct {
	name, channel string
	typ           ingest.Type
	kept          bool // the file holds it: not decoded again
	size          int  // bytes of a message
	messages      uint64
	firstNs       int64
	lastNs        int64
}

// newCANDecoding returns the decoding of the file at path when SetDBCs
// set one, else nil; topics are the file's own topics.
func newCANDecoding(path string, topics []SourceTopic) *canDecoding {
	o := canDBCs.Load()
	if o == nil {
		return nil
	}
	d := &canDecoding{o: o, path: path, have: map[topicKey]bool{}, frames: map[topicKey]*decFrames{}, topics: map[decKey]*decTopic{}}
	for _, t := range topics {
		d.have[topicKey{t.Name, t.Channel}] = true
	}
	for _, t := range topics {
		if isFrameTopic(t) {
			d.frameTopic(t.Name, t.Channel)
		}
	}
	return d
}

// isFrameTopic reports whether every type of t is a CAN frame's.
func isFrameTopic(t SourceTopic) bool {
	for _, ts := range t.Types {
		if ok, _ := can.IsFrameType(ts.Type); !ok {
			return false
		}
	}
	return len(t.Types) > 0
}

// decodes reports whether the file has a frame topic a DBC decodes.
func (d *canDecoding) decodes() bool { return d != nil && len(d.order) > 0 }

// frameTopic returns how the frame topic name#channel decodes, made at
// its first use: nil for an error topic or a bus no DBC decodes.
func (d *canDecoding) frameTopic(name, channel string) *decFrames {
	k := topicKey{name, channel}
	if fr, ok := d.frames[k]; ok {
		return fr
	}
	var fr *decFrames
	if !strings.HasSuffix(name, defaults.CANErrorSuffix) {
		st := SourceTopic{Name: name, Channel: channel}
		if dbc := d.o.dbcOf(busOf(st, false)); dbc != nil {
			parent := name
			if i := strings.LastIndexByte(name, '/'); i >= 0 && isIDTopic(name[i+1:]) {
				parent = name[:i]
			}
			fr = &decFrames{name: name, channel: channel, prefix: parent + "/", dbc: dbc}
			d.order = append(d.order, fr)
		}
	}
	d.frames[k] = fr
	return fr
}

// frameFor returns how message m decodes: nil when it is not a frame of
// a decoded frame topic.
func (d *canDecoding) frameFor(m *Message) *decFrames {
	if m.Type == nil || m.Type.Schema.Name != can.FrameTypeName && m.Type.Schema.Name != can.FDFrameTypeName {
		return nil
	}
	if d.lastOK && m.Name == d.last.name && m.Channel == d.last.channel {
		return d.lastFr
	}
	fr, known := d.frames[topicKey{m.Name, m.Channel}]
	if ok, _ := can.IsFrameType(*m.Type); !known && ok { // a log's bus, a walk
		fr = d.frameTopic(m.Name, m.Channel)
	}
	d.last, d.lastFr, d.lastOK = topicKey{m.Name, m.Channel}, fr, true
	return fr
}

// topic returns message cm's topic on fr's bus, made at its first use.
func (d *canDecoding) topic(fr *decFrames, cm *can.Message) *decTopic {
	k := decKey{fr.prefix, fr.channel, cm}
	if t := d.topics[k]; t != nil {
		return t
	}
	t := &decTopic{name: fr.prefix + cm.Name, channel: fr.channel, typ: cm.Type, size: cm.EncodedSize()}
	if d.have[topicKey{t.name, t.channel}] {
		t.kept = true
		d.o.report(d.path, fmt.Sprintf("%s is in the file already (decoded when it was recorded): given as recorded, not decoded again by %s",
			mcap.TopicName(t.name, t.channel), filepath.Base(fr.dbc.Name)))
	}
	d.topics[k] = t
	d.list = append(d.list, t)
	return t
}

// observe counts frame message m (the first pass over a file): what its
// topic's DBC makes of it, and its message's topic.
func (d *canDecoding) observe(m *Message) {
	fr := d.frameFor(m)
	if fr == nil {
		return
	}
	var f can.Frame
	if f.Decode(m.Data) != nil {
		return // not a frame: the verbs reading it say so
	}
	cm := fr.tally.Add(fr.dbc, &f)
	if cm == nil {
		return
	}
	t := d.topic(fr, cm)
	if t.messages == 0 {
		t.firstNs = m.TimeNs
	}
	t.messages++
	t.lastNs = m.TimeNs
}

// decode decodes frame message m into out (its data in *buf) and reports
// whether m is a frame of a decoded topic that its DBC decodes.
func (d *canDecoding) decode(m *Message, buf *[]byte, out *Message) bool {
	fr := d.frameFor(m)
	if fr == nil {
		return false
	}
	var f can.Frame
	if f.Decode(m.Data) != nil {
		return false
	}
	cm, why := fr.dbc.Match(&f)
	if why != can.Decodable {
		return false
	}
	t := d.topic(fr, cm)
	if t.kept {
		return false
	}
	n := cm.EncodedSize()
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	cm.Decode(b, &f)
	*out = Message{Name: t.name, Channel: t.channel, GenNs: m.GenNs, DoneNs: m.DoneNs, TimeNs: m.TimeNs, Data: b, Type: &t.typ}
	return true
}

// survey makes the first pass over s (its own messages: s.dec is not
// set yet) and publishes what it found.
func (d *canDecoding) survey(s *Source) error {
	if err := s.InFileOrder(func(m *Message) error { d.observe(m); return nil }); err != nil {
		return err
	}
	d.publish(s)
	return nil
}

// publish adds to s what the first pass found: the decoded topics (with
// their counts) after its own, and each decoded frame topic's accounting
// by its DBC in its dump information.
func (d *canDecoding) publish(s *Source) {
	for _, t := range d.list {
		if !t.kept && t.messages > 0 {
			s.topics = append(s.topics, SourceTopic{Name: t.name, Channel: t.channel, Type: t.typ, Types: []TypeSpan{{Type: t.typ}},
				Messages: t.messages})
		}
	}
	for _, fr := range d.order {
		acc := fr.tally.Account(fr.dbc)
		i := slices.IndexFunc(s.info.Topics, func(a dumpinfo.TopicAccount) bool {
			n, c := pack.SplitTopic(a.Topic)
			return n == fr.name && c == fr.channel
		})
		if i < 0 {
			i = len(s.info.Topics)
			s.info.Topics = append(s.info.Topics, dumpinfo.TopicAccount{Topic: pack.Topic(fr.name, fr.channel)})
		}
		s.info.Topics[i].CAN = acc
		s.hasDI = true
	}
	s.dec = d
}

// attachCAN makes s give its CAN frame topics decoded (SetDBCs), when
// there is a DBC for one of them: after a first pass over the file with
// survey (the decoded topics and their counts, the accounting), without
// it for a walk (which lists no topics).
func attachCAN(s *Source, survey bool) error {
	d := newCANDecoding(s.Path, s.topics)
	if !d.decodes() {
		return nil
	}
	if !survey {
		s.dec = d
		return nil
	}
	return d.survey(s)
}

// DecodedTopics returns the topics the Source gives decoded from its CAN
// frame topics by SetDBCs' DBCs (they are in Topics too), nil when none:
// their messages come from Messages, InFileOrder and the Timeline, not
// from the readers Pack and MCAP return.
func (s *Source) DecodedTopics() []SourceTopic {
	if s.dec == nil {
		return nil
	}
	var out []SourceTopic
	for _, t := range s.topics {
		for _, dt := range s.dec.list {
			if !dt.kept && t.Name == dt.name && t.Channel == dt.channel {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// addDecoded adds to in, a dump's summary, the topics --dbc decodes from
// its CAN frame topics (SetDBCs) and their accounting, reading the file
// through; nothing when there is no DBC or no frame topic. A file that
// cannot be opened is left as summarised, told to the report.
func (in *Info) addDecoded(path string) error {
	o := canDBCs.Load()
	if o == nil || !slices.ContainsFunc(in.Topics, func(t Topic) bool {
		return t.Type == can.FrameTypeName || t.Type == can.FDFrameTypeName
	}) {
		return nil
	}
	s, err := Open(path)
	if err != nil {
		return err
	}
	defer s.Close()
	if s.dec == nil {
		return nil
	}
	byName := map[string]int{}
	for i, t := range in.Topics {
		byName[t.Name] = i
	}
	for _, t := range s.dec.list {
		if t.kept || t.messages == 0 {
			continue
		}
		tp := Topic{Name: topicName(pack.Topic(t.name, t.channel)), Messages: t.messages, Bytes: t.messages * uint64(t.size),
			FirstNs: t.firstNs, LastNs: t.lastNs}
		tp.setType(t.typ, 0)
		in.Topics = append(in.Topics, tp)
		in.Messages += tp.Messages
		in.Bytes += tp.Bytes
	}
	for _, fr := range s.dec.order {
		if i, ok := byName[topicName(pack.Topic(fr.name, fr.channel))]; ok {
			in.Topics[i].CAN = fr.tally.Account(fr.dbc)
		}
	}
	sort.SliceStable(in.Topics, func(i, j int) bool { return in.Topics[i].Name < in.Topics[j].Name })
	return nil
}

// plusCAN is the accounting of a frame topic held by two dumps merged:
// the counts summed, the IDs named by either (up to
// defaults.CANMaxUndecodableIDs), the DBCs named by either.
func plusCAN(a, b *dumpinfo.CANAccount) *dumpinfo.CANAccount {
	if a == nil || b == nil {
		if a == nil {
			a = b
		}
		if a == nil {
			return nil
		}
		cp := *a
		return &cp
	}
	ids := func(x, y []string) []string {
		out := slices.Clone(x)
		for _, id := range y {
			if len(out) < defaults.CANMaxUndecodableIDs && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		return out
	}
	out := &dumpinfo.CANAccount{DBC: a.DBC, Decoded: a.Decoded + b.Decoded, Unknown: a.Unknown + b.Unknown, Short: a.Short + b.Short,
		UnknownIDs: ids(a.UnknownIDs, b.UnknownIDs), ShortIDs: ids(a.ShortIDs, b.ShortIDs)}
	if b.DBC != a.DBC && !slices.Contains(strings.Split(a.DBC, ", "), b.DBC) {
		out.DBC += ", " + b.DBC
	}
	return out
}
