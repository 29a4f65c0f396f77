package dumpfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// ErrEmpty is returned by Rewrite when a cut keeps no message (no file is
// written).
var ErrEmpty = errors.New("dumpfile: the cut keeps no message")

// Window bounds a rewrite in message time, both ends included
// (math.MinInt64 / math.MaxInt64 for an open end).
type Window struct{ FromNs, ToNs int64 }

// Split cuts a rewrite into several files. The zero value writes one.
type Split struct {
	// Every is how much message time each file holds: file k holds the
	// kept messages in [first + k*Every, first + (k+1)*Every), first being
	// the first kept message's time. 0 = no limit.
	Every int64
	// Size starts a new file once one has this many bytes (a file ends
	// up larger by up to a frame or chunk). 0 = no limit.
	Size int64
}

// RewriteOptions configure Rewrite.
type RewriteOptions struct {
	Format      string // FormatPack ("" too) or FormatMCAP
	Compression string // "none" ("" too), "lz4" or "zstd"
	// KeepPacked (MCAP) writes packed-struct topics as they are instead of
	// transcoding them to json (mcap.Options.KeepPacked).
	KeepPacked bool
	Writer     string // the program that writes the output ("edr-lite filter")
	// Topics and Window select what is kept (the zero Topics keeps every
	// topic, a nil Window every time).
	Topics TopicFilter
	Window *Window
	// Cut records in the output's dump information that it is a cut of
	// the inputs (dumpinfo.Cut) and recounts each topic for it. Implied by
	// a selection (Topics, Window) or a Split; without any, the inputs'
	// accounting is summed (merge).
	Cut bool
	// AroundTrigger is recorded in the Cut (the trigger id the window was
	// taken around).
	AroundTrigger uint64
	Split         Split
	// Progress, when not nil, is called with the messages read so far
	// every 4096 messages and once at the end.
	Progress func(read uint64)
	// Stamp, when set, is written into every output: its provenance, and
	// a seal of the operator's key (docs/evidence.md). The inputs' seals
	// and provenance are never copied.
	Stamp *Stamp
}

// Output says where Rewrite writes: a file Path (each written as
// Path.tmp and renamed once complete; split files are PartPath(Path, n)),
// or else the stream W (one output, no split). A file that exists is not
// overwritten.
type Output struct {
	Path string
	W    io.Writer
}

// PartReport is one file Rewrite wrote.
type PartReport struct {
	Path           string // "" for a stream
	Messages       uint64
	Bytes          uint64 // data bytes
	FirstNs        int64  // first and last message time
	LastNs         int64
	Triggers       int
	Size           int64 // bytes written
	CutMessages    uint64
	DroppedTopics  int
	DroppedTrigger int
}

// RewriteReport says what Rewrite wrote.
type RewriteReport struct {
	Inputs   int
	Parts    []PartReport
	Messages uint64 // written, over all parts
	Bytes    uint64
	// Read is the messages read from the inputs (a window skips most of
	// the others without reading them); Held what the inputs hold.
	Read, Held uint64
	// Attachments is the attachments each output holds: every input's
	// (an attachment equal to one before it, name, media type, times and
	// bytes, is written once).
	Attachments int
	// Notes are warnings about what was written: what the outputs could
	// not hold as the inputs had it (a pack metadata section of one name
	// in several inputs with different bytes: the first input's is kept),
	// and for an MCAP output the foxglove.CompressedVideo topics with
	// B-frames, which Foxglove cannot play (one line each).
	Notes []string
}

// PartPath names the n-th file (from 1) of a split of path:
// "out.pack" -> "out_0001.pack".
func PartPath(path string, n int) string {
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s_%04d%s", strings.TrimSuffix(path, ext), n, ext)
}

// combined is what the inputs of a rewrite say about themselves.
type combined struct {
	hasInfo  bool
	info     dumpinfo.Info                     // triggers, window, writer... of all inputs
	accounts map[string]*dumpinfo.TopicAccount // summed, by pack topic ("name#channel")
	order    []string                          // accounting topics, sorted
	counts   map[string]uint64                 // messages per topic in the files
	types    map[string]string                 // type names, for the accounting
	// meta is the channel metadata MCAP inputs give their topics (less the
	// edr.* keys), kept on an MCAP output.
	meta  map[string]map[string]string
	total uint64
	of    []string
}

// combine sums the dump information of the sources: every trigger, the
// union of the windows, per-topic accounting summed (a topic spelled
// "name" by one input and "name#" by another is one topic).
func combine(srcs []*Source) *combined {
	c := &combined{accounts: map[string]*dumpinfo.TopicAccount{}, counts: map[string]uint64{}, types: map[string]string{},
		meta: map[string]map[string]string{}}
	for i, s := range srcs {
		c.of = append(c.of, filepath.Base(s.Path))
		if mp := s.MCAP(); mp != nil {
			for _, t := range mp.DeclaredTopics() {
				if k := pack.Topic(t.Name, t.Channel); t.Metadata != nil && c.meta[k] == nil {
					c.meta[k] = t.Metadata
				}
			}
		}
		for _, t := range s.Topics() {
			k := pack.Topic(t.Name, t.Channel)
			c.counts[k] += t.Messages
			c.total += t.Messages
			if c.types[k] == "" {
				c.types[k] = t.Type.Schema.Name
			}
		}
		d, ok := s.DumpInfo()
		if !ok {
			continue
		}
		if !c.hasInfo || i == 0 {
			c.info.Host, c.info.CreatedNs, c.info.Labels = d.Host, d.CreatedNs, d.Labels
		}
		c.hasInfo = true
		c.info.Triggers = append(c.info.Triggers, d.Triggers...)
		if d.StartNs != 0 && (c.info.StartNs == 0 || d.StartNs < c.info.StartNs) {
			c.info.StartNs = d.StartNs
		}
		c.info.EndNs = max(c.info.EndNs, d.EndNs)
		for _, a := range d.Topics {
			a.Topic = pack.Topic(pack.SplitTopic(a.Topic))
			acc, ok := c.accounts[a.Topic]
			if !ok {
				cp := a
				c.accounts[a.Topic] = &cp
				c.order = append(c.order, a.Topic)
				continue
			}
			acc.Messages += a.Messages
			acc.Bytes += a.Bytes
			acc.Overwritten += a.Overwritten
			acc.Oversize += a.Oversize
			acc.SkippedBusy += a.SkippedBusy
			acc.LostAtSource += a.LostAtSource
			acc.Cut += a.Cut
			acc.CAN = plusCAN(acc.CAN, a.CAN)
			if a.FirstNs != 0 && (acc.FirstNs == 0 || a.FirstNs < acc.FirstNs) {
				acc.FirstNs = a.FirstNs
			}
			acc.LastNs = max(acc.LastNs, a.LastNs)
			if a.EventLastNs != 0 && (acc.EventLastNs == 0 || a.EventFirstNs < acc.EventFirstNs) {
				acc.EventFirstNs = a.EventFirstNs
			}
			acc.EventLastNs = max(acc.EventLastNs, a.EventLastNs)
			if acc.Type == "" {
				acc.Type = a.Type
			}
		}
	}
	sort.Strings(c.order)
	return c
}

// topicStat counts what one output holds of one topic.
type topicStat struct {
	messages, bytes uint64
	first, last     int64
}

// part is one output being written.
type part struct {
	path    string
	w       rewriteSink
	types   map[string]*ingest.Type // each topic's type as written so far
	stats   map[string]*topicStat
	order   []string
	rep     PartReport
	startNs int64 // split by time: the part's slot
	endNs   int64 // exclusive; 0 when not split by time
}

// rewriteSink is what pack.Writer and mcap.PackWriter have in common.
type rewriteSink interface {
	Add(name, channel string, meta []byte, genTs, doneTs int64, data []byte) error
	AddSeq(name, channel string, meta []byte, genTs, doneTs int64, seq uint64, data []byte) error
	AddMetadata(name string, data []byte) error
	AddAttachment(a pack.Attachment) error
	SetDumpInfo(d dumpinfo.Info) error
	Offset() int64
	Close() error
}

// Rewrite writes the messages of srcs (pack or MCAP, in any mix) that the
// options select, merged in message time order (as Messages merges them),
// to out in opts.Format: a cut, a split, a merge or a change of format.
// Each output keeps the inputs' topic types (and, from MCAP inputs, message
// encodings, schemas and channel metadata when written as MCAP), their
// other metadata, and the triggers within its window; its dump information
// says what it is a cut of and what was left out (dumpinfo.Cut). A
// message's capture time is written as its message time (pack
// MessageTime: the capture time, else the producer time).
//
// A cut that keeps nothing is ErrEmpty and writes no file. On any other
// error, the files not yet complete are removed; complete parts stay.
func Rewrite(srcs []*Source, out Output, opts RewriteOptions) (*RewriteReport, error) {
	if len(srcs) == 0 {
		return nil, errors.New("dumpfile: rewrite needs at least one input")
	}
	switch opts.Format {
	case "", FormatPack, FormatMCAP:
	default:
		return nil, fmt.Errorf("dumpfile: cannot write format %q", opts.Format)
	}
	split := opts.Split.Every > 0 || opts.Split.Size > 0
	if split && out.Path == "" {
		return nil, errors.New("dumpfile: a split writes files: give a path")
	}
	cut := opts.Cut || !opts.Topics.All() || opts.Window != nil || split
	cmb := combine(srcs)
	rw := &rewriter{srcs: srcs, out: out, opts: opts, cmb: cmb, cut: cut, split: split,
		rep: &RewriteReport{Inputs: len(srcs), Held: cmb.total}}
	err := rw.run()
	if err != nil {
		if rw.cur != nil {
			rw.abort(rw.cur)
		}
		return nil, err
	}
	return rw.rep, nil
}

type rewriter struct {
	srcs       []*Source
	out        Output
	opts       RewriteOptions
	cmb        *combined
	cut, split bool
	rep        *RewriteReport
	cur        *part
	firstNs    int64               // first kept message's time (split by time)
	keys       map[topicKey]string // pack.Topic of each name and channel, made once
	video      videoOrder          // B-frames in what an MCAP output gets
}

// key returns pack.Topic(name, channel) without allocating after the
// topic's first message.
func (rw *rewriter) key(name, channel string) string {
	if k, ok := rw.keys[topicKey{name, channel}]; ok {
		return k
	}
	if rw.keys == nil {
		rw.keys = map[topicKey]string{}
	}
	k := pack.Topic(name, channel)
	rw.keys[topicKey{name, channel}] = k
	return k
}

func (rw *rewriter) run() error {
	msgs := NewMessages(rw.srcs...)
	win := Window{FromNs: filter.MinNs, ToNs: filter.MaxNs}
	if rw.opts.Window != nil {
		win = *rw.opts.Window
	}
	if win.FromNs != filter.MinNs {
		if err := msgs.SeekTime(win.FromNs); err != nil {
			return err
		}
	}
	for {
		ok, err := msgs.Next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		rw.rep.Read++
		if p := rw.opts.Progress; p != nil && rw.rep.Read%4096 == 0 {
			p(rw.rep.Read)
		}
		m := msgs.Message()
		if m.TimeNs > win.ToNs {
			break // the merge is in time order
		}
		if m.TimeNs < win.FromNs || !rw.opts.Topics.MatchName(m.Name, m.Channel) {
			continue
		}
		if err := rw.write(m); err != nil {
			return err
		}
	}
	if rw.cur == nil && len(rw.rep.Parts) == 0 {
		if rw.cut {
			return ErrEmpty
		}
		if err := rw.open(0); err != nil { // an empty merge still makes a file
			return err
		}
	}
	if rw.cur != nil {
		if err := rw.finish(rw.cur); err != nil {
			return err
		}
	}
	if p := rw.opts.Progress; p != nil {
		p(rw.rep.Read)
	}
	rw.rep.Notes = append(rw.rep.Notes, rw.video.notes()...)
	return nil
}

// write adds m to the current part, starting a new one where the split
// says.
func (rw *rewriter) write(m *Message) error {
	p := rw.cur
	if p != nil && rw.split {
		next := p.endNs != 0 && m.TimeNs >= p.endNs ||
			rw.opts.Split.Size > 0 && p.w.Offset() >= rw.opts.Split.Size
		if next {
			if err := rw.finish(p); err != nil {
				return err
			}
			p = nil
		}
	}
	if p == nil {
		if len(rw.rep.Parts) == 0 {
			rw.firstNs = m.TimeNs
		}
		if err := rw.open(m.TimeNs); err != nil {
			return err
		}
		p = rw.cur
	}
	k := rw.key(m.Name, m.Channel)
	if err := rw.setType(p, k, m); err != nil {
		return fmt.Errorf("%s: %w", p.label(), err)
	}
	var err error
	if m.HasSeq { // the producer's sequence number, kept
		err = p.w.AddSeq(m.Name, m.Channel, m.Meta, m.GenNs, m.TimeNs, m.Seq, m.Data)
	} else {
		err = p.w.Add(m.Name, m.Channel, m.Meta, m.GenNs, m.TimeNs, m.Data)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", p.label(), err)
	}
	if rw.opts.Format == FormatMCAP {
		rw.video.add(m)
	}
	st := p.stats[k]
	if st == nil {
		st = &topicStat{first: m.TimeNs}
		p.stats[k] = st
		p.order = append(p.order, k)
	}
	st.messages++
	st.bytes += uint64(len(m.Data))
	st.last = m.TimeNs
	p.rep.Messages++
	p.rep.Bytes += uint64(len(m.Data))
	if p.rep.Messages == 1 {
		p.rep.FirstNs = m.TimeNs
	}
	p.rep.LastNs = m.TimeNs
	return nil
}

func (p *part) label() string {
	if p.path == "" {
		return "output"
	}
	return p.path
}

// open starts the next part, whose first message is at atNs.
func (rw *rewriter) open(atNs int64) error {
	n := len(rw.rep.Parts) + 1
	p := &part{stats: map[string]*topicStat{}, types: map[string]*ingest.Type{}}
	if every := rw.opts.Split.Every; every > 0 {
		k := (atNs - rw.firstNs) / every
		p.startNs = rw.firstNs + k*every
		p.endNs = p.startNs + every
	}
	p.path = rw.out.Path
	if rw.split {
		p.path = PartPath(rw.out.Path, n)
	}
	var err error
	if p.path != "" {
		if _, err := os.Stat(p.path); err == nil {
			return fmt.Errorf("%s exists; refusing to overwrite", p.path)
		}
	}
	if p.w, err = rw.create(p.path); err != nil {
		return err
	}
	p.rep.Path = p.path
	rw.cur = p
	return nil
}

// create makes the writer of one output.
func (rw *rewriter) create(path string) (rewriteSink, error) {
	writer := rw.opts.Writer
	if writer == "" {
		writer = "edr-lite"
	}
	if path != "" && rw.opts.Format != FormatMCAP {
		path += ".tmp" // renamed by finish; the MCAP writer renames its own
	}
	return newSink(path, rw.out.W, sinkOptions{Format: rw.opts.Format, Compression: rw.opts.Compression, Writer: writer,
		KeepPacked: rw.opts.KeepPacked, SplitSize: rw.opts.Split.Size, Stamp: rw.opts.Stamp})
}

// setType gives part p the type of message m's topic k before m when it
// is the topic's first message in p or its type changed: a pack output gets
// a type section, an MCAP output the topic's channel for that type (with
// the channel metadata an MCAP input gave the topic).
func (rw *rewriter) setType(p *part, k string, m *Message) error {
	if m.Type == nil || p.types[k] == m.Type {
		return nil
	}
	prev := p.types[k]
	p.types[k] = m.Type
	if prev != nil && prev.Equal(*m.Type) {
		return nil
	}
	switch w := p.w.(type) {
	case *pack.Writer:
		return w.SetTopicType(m.Name, m.Channel, *m.Type, m.TimeNs)
	case *mcap.PackWriter:
		return w.DeclareTopic(mcap.Topic{Name: m.Name, Channel: m.Channel, Type: *m.Type, Metadata: rw.cmb.meta[k]})
	}
	return nil
}

// finish writes a part's metadata, attachments and dump information and
// closes it.
func (rw *rewriter) finish(p *part) error {
	rw.cur = nil
	if err := rw.metadata(p); err != nil {
		rw.abort(p)
		return err
	}
	if err := rw.attachments(p); err != nil {
		rw.abort(p)
		return fmt.Errorf("%s: %w", p.label(), err)
	}
	if info, ok := rw.info(p); ok {
		if err := p.w.SetDumpInfo(info); err != nil {
			rw.abort(p)
			return err
		}
	}
	if err := p.w.Close(); err != nil {
		rw.abort(p)
		return fmt.Errorf("%s: %w", p.label(), err)
	}
	if _, isPack := p.w.(*pack.Writer); isPack && p.path != "" {
		if err := os.Rename(p.path+".tmp", p.path); err != nil {
			os.Remove(p.path + ".tmp")
			return err
		}
	}
	if p.path != "" {
		if st, err := os.Stat(p.path); err == nil {
			p.rep.Size = st.Size()
		}
	} else {
		p.rep.Size = p.w.Offset()
	}
	rw.rep.Parts = append(rw.rep.Parts, p.rep)
	rw.rep.Messages += p.rep.Messages
	rw.rep.Bytes += p.rep.Bytes
	return nil
}

// abort removes a part that cannot be completed.
func (rw *rewriter) abort(p *part) {
	rw.cur = nil
	switch w := p.w.(type) {
	case *mcap.PackWriter:
		w.Abort()
	case *pack.Writer:
		w.Close()
		if p.path != "" {
			os.Remove(p.path + ".tmp")
		}
	}
}

// attachments copies every input's attachments into a part, each once
// (an attachment equal to one written before, bytes and all, is not
// written again).
func (rw *rewriter) attachments(p *part) error {
	type key struct {
		name, media     string
		logNs, createNs int64
		size            int
	}
	done := map[key][][]byte{} // the data of those written, by the rest
	n := 0
	for _, s := range rw.srcs {
		as, err := s.Attachments()
		if err != nil {
			return err
		}
		for _, a := range as {
			k := key{a.Name, a.MediaType, a.LogNs, a.CreateNs, len(a.Data)}
			if slices.ContainsFunc(done[k], func(d []byte) bool { return bytes.Equal(d, a.Data) }) {
				continue
			}
			if err := p.w.AddAttachment(a); err != nil {
				return err
			}
			done[k] = append(done[k], a.Data)
			n++
		}
	}
	rw.rep.Attachments = n
	return nil
}

// metadata copies the inputs' other metadata (not their dump information)
// into a part: pack sections by name, MCAP records as they were to an MCAP
// output, else as pack sections (mcap.PackReader.Sections). A pack output
// holds one section per name: a name several inputs have is written once
// when their bytes are equal, as all their MCAP records when each is MCAP
// records (mcap.MetadataRecords), else as the first input's, said in the
// report's Notes.
func (rw *rewriter) metadata(p *part) error {
	pw, toMCAP := p.w.(*mcap.PackWriter)
	if !toMCAP {
		if err := rw.packMetadata(p); err != nil {
			return err
		}
		return rw.stamp(p)
	}
	for _, s := range rw.srcs {
		if r := s.Pack(); r != nil {
			for _, name := range r.MetadataNames() {
				if name == dumpinfo.MetadataName || evidence.Stamped(name) {
					continue
				}
				b, _ := r.Metadata(name)
				if err := p.w.AddMetadata(name, b); err != nil {
					return err
				}
			}
			continue
		}
		mp := s.MCAP()
		if mp == nil {
			continue // a camera file has no metadata
		}
		for _, md := range mp.Info().Metadata {
			switch md.Name {
			case mcap.MetadataDump, mcap.MetadataTrigger, mcap.MetadataTopicStats, mcap.MetadataPackHeader:
				continue
			}
			if evidence.Stamped(md.Name) {
				continue
			}
			if err := pw.Writer().AddMetadata(md.Name, md.KV); err != nil {
				return err
			}
		}
	}
	return rw.stamp(p)
}

// stamp writes the provenance of RewriteOptions.Stamp into part p.
func (rw *rewriter) stamp(p *part) error {
	if st := rw.opts.Stamp; st != nil {
		return p.w.AddMetadata(evidence.ProvenanceName, st.blob())
	}
	return nil
}

// packMetadata is metadata for a pack output (an input's seal and
// provenance left out: evidence.Stamped).
func (rw *rewriter) packMetadata(p *part) error {
	var names []string
	data := map[string][]byte{}
	from := map[string]string{} // the input whose section was kept
	for _, s := range rw.srcs {
		var ns []string
		var ds [][]byte
		if r := s.Pack(); r != nil {
			for _, name := range r.MetadataNames() {
				if name != dumpinfo.MetadataName {
					b, _ := r.Metadata(name)
					ns, ds = append(ns, name), append(ds, b)
				}
			}
		} else if mp := s.MCAP(); mp != nil {
			ns, ds = mp.Sections()
		}
		for i, n := range ns {
			if evidence.Stamped(n) {
				continue
			}
			old, seen := data[n]
			switch {
			case !seen:
				names = append(names, n)
				data[n], from[n] = ds[i], s.Path
			case bytes.Equal(old, ds[i]):
			default:
				a, okA := mcap.MetadataRecords(old)
				b, okB := mcap.MetadataRecords(ds[i])
				if okA && okB { // MCAP records: all of them, as MCAP would hold them
					if both, err := json.Marshal(append(a, b...)); err == nil {
						data[n] = both
						continue
					}
				}
				rw.note(fmt.Sprintf("metadata %q of %s differs from that of %s; a pack file holds one per name: kept the one of %s",
					n, s.Path, from[n], from[n])) // once, not per part
			}
		}
	}
	for _, n := range names {
		if err := p.w.AddMetadata(n, data[n]); err != nil {
			return err
		}
	}
	return nil
}

// note adds a line to the report's Notes, once.
func (rw *rewriter) note(s string) {
	if !slices.Contains(rw.rep.Notes, s) {
		rw.rep.Notes = append(rw.rep.Notes, s)
	}
}

// info is the dump information of part p; ok is false when it has none
// (no input had any, and it is not a cut).
func (rw *rewriter) info(p *part) (dumpinfo.Info, bool) {
	c := rw.cmb
	if !rw.cut {
		if !c.hasInfo {
			return dumpinfo.Info{}, false
		}
		d := c.info
		d.Writer = rw.opts.Writer
		for _, k := range c.order {
			d.Topics = append(d.Topics, *c.accounts[k])
		}
		p.rep.Triggers = len(d.Triggers)
		return d, true
	}
	// The part's window: its time slot (split by time), what it holds
	// (split by size), or the selection's window; an open end or one past
	// what the inputs cover is brought in to their window, never past a
	// message kept (a latched message may predate the window).
	from, to := int64(filter.MinNs), int64(filter.MaxNs)
	switch {
	case p.endNs != 0:
		from, to = p.startNs, p.endNs-1
	case rw.split:
		from, to = p.rep.FirstNs, p.rep.LastNs
	case rw.opts.Window != nil:
		from, to = rw.opts.Window.FromNs, rw.opts.Window.ToNs
	}
	if c.hasInfo && (c.info.StartNs != 0 || c.info.EndNs != 0) {
		from, to = max(from, c.info.StartNs), min(to, c.info.EndNs)
	}
	if from == filter.MinNs {
		from = p.rep.FirstNs
	}
	if to == filter.MaxNs {
		to = p.rep.LastNs
	}
	from, to = min(from, p.rep.FirstNs), max(to, p.rep.LastNs)
	d := dumpinfo.Info{Writer: rw.opts.Writer, Host: c.info.Host, CreatedNs: c.info.CreatedNs, Labels: c.info.Labels,
		StartNs: from, EndNs: to}
	for _, t := range c.info.Triggers {
		if t.TimeNs >= from && t.TimeNs <= to {
			d.Triggers = append(d.Triggers, t)
		}
	}
	cutRec := &dumpinfo.Cut{Of: c.of, FromNs: from, ToNs: to, Topics: rw.opts.Topics.Include,
		Exclude: rw.opts.Topics.Exclude, AroundTrigger: rw.opts.AroundTrigger,
		Messages: c.total - p.rep.Messages, DroppedTriggers: len(c.info.Triggers) - len(d.Triggers)}
	if rw.split {
		cutRec.Part = len(rw.rep.Parts) + 1
	}
	keys := map[string]bool{}
	for k := range c.counts {
		keys[k] = true
	}
	for _, k := range c.order {
		keys[k] = true
	}
	all := make([]string, 0, len(keys))
	for k := range keys {
		all = append(all, k)
	}
	sort.Strings(all)
	for _, k := range all {
		st := p.stats[k]
		if st == nil {
			cutRec.DroppedTopics = append(cutRec.DroppedTopics, strings.TrimSuffix(k, "#"))
			continue
		}
		a := dumpinfo.TopicAccount{Topic: k, Type: c.types[k]}
		if acc := c.accounts[k]; acc != nil {
			a = *acc
			if a.Type == "" {
				a.Type = c.types[k]
			}
		}
		a.Messages, a.Bytes, a.FirstNs, a.LastNs = st.messages, st.bytes, st.first, st.last
		a.Cut = c.counts[k] - min(st.messages, c.counts[k])
		if a.Cut != 0 {
			// the inputs' event-time span is not the cut's, and this
			// path does not read event times
			a.EventFirstNs, a.EventLastNs = 0, 0
		}
		d.Topics = append(d.Topics, a)
	}
	d.Cut = cutRec
	p.rep.Triggers = len(d.Triggers)
	p.rep.CutMessages = cutRec.Messages
	p.rep.DroppedTopics = len(cutRec.DroppedTopics)
	p.rep.DroppedTrigger = cutRec.DroppedTriggers
	return d, true
}
