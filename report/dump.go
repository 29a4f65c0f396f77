package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/schema"
)

// DumpOptions configure a report of dump files.
type DumpOptions struct {
	Options
	// FromNs and ToNs cut the time axis (0: the dumps' own bounds).
	FromNs, ToNs int64
	// Topics and Exclude are topic globs (path.Match, over "name#channel"
	// or the name): only topics matching Topics (all when empty) and no
	// Exclude are in the report.
	Topics, Exclude []string
	// Verify checks every byte of each MCAP file (edr-lite verify) for
	// the file facts. Pack files are always checked while they are read
	// (every frame's CRC, the index and the trailer).
	Verify bool
	// Progress, when set, is called now and then with the messages read
	// so far and the messages the dumps hold.
	Progress func(done, total uint64)
}

// DumpTopicType returns the type the dump records for one of its topics,
// when the dump says: a pack file's type section, an MCAP file's channel
// message encoding and schema (dumpfile.SourceTopic.Type). Raw bytes and
// undeclared types say nothing.
func DumpTopicType(_ *dumpfile.Source, t *dumpfile.SourceTopic) (schema.Type, bool) {
	if t.Type.IsZero() || t.Type.MessageEncoding == schema.EncodingRaw || t.Type.Validate() != nil {
		return schema.Type{}, false
	}
	return t.Type, true
}

// FromDumps reads the dump files at paths (pack or MCAP, any mix; several
// are merged in time order as "edr-lite merge" does) and analyses them.
func FromDumps(paths []string, o DumpOptions) (*Report, error) {
	var srcs []*dumpfile.Source
	defer func() {
		for _, s := range srcs {
			s.Close()
		}
	}()
	for _, p := range paths {
		s, err := dumpfile.Open(p)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, s)
	}
	r, err := FromSources(srcs, o)
	if err != nil {
		return nil, err
	}
	for i, p := range paths {
		f, err := fileFacts(p, srcs[i], r.Files[i], o.Verify)
		if err != nil {
			return nil, err
		}
		r.Files[i] = f
	}
	return r, nil
}

type topicKey struct{ name, channel string }

// FromSources analyses open dumps. The Report's Files carry what the
// sources say (path, format, messages); FromDumps completes them from the
// files.
func FromSources(srcs []*dumpfile.Source, o DumpOptions) (*Report, error) {
	var triggers []dumpinfo.Trigger
	accounts := map[string]*Accounting{}
	windows := map[string][2]int64{} // per topic, the window the dumps asked
	var lo, hi int64
	widen := func(a, b int64) {
		if a == 0 && b == 0 {
			return
		}
		if lo == 0 && hi == 0 {
			lo, hi = a, b
			return
		}
		lo, hi = min(lo, a), max(hi, b)
	}
	type trigKey struct {
		id                uint64
		reason, src, rule string
		at, from, to      int64
	}
	seen := map[trigKey]bool{}
	var total uint64
	files := make([]File, len(srcs))
	for i, s := range srcs {
		files[i] = File{Path: s.Path, Format: s.Format, Verify: "not checked"}
		for _, t := range s.Topics() {
			total += t.Messages
			files[i].Messages += t.Messages
		}
		d, ok := s.DumpInfo()
		if ok {
			widen(d.StartNs, d.EndNs)
			for _, t := range d.Triggers {
				from, to, _, _, ok := t.Window()
				if ok {
					t.FromNs, t.ToNs = from, to // the effective window, read once
				}
				k := trigKey{t.ID, t.Reason, t.Source, t.Rule, t.TimeNs, t.FromNs, t.ToNs}
				if !seen[k] {
					seen[k] = true
					triggers = append(triggers, t)
				}
				if ok {
					widen(from, to)
				}
			}
			upper := labelSet(d.Labels[dumpinfo.DropsUpperBoundLabel])
			startLost := labelSet(d.Labels[dumpinfo.StartLostLabel])
			for _, ta := range d.Topics {
				name := strings.TrimSuffix(ta.Topic, "#")
				a := accounts[name]
				if a == nil {
					a = &Accounting{}
					accounts[name] = a
				}
				a.Messages += ta.Messages
				a.Bytes += ta.Bytes
				a.Overwritten += ta.Overwritten
				a.LostAtSource += ta.LostAtSource
				a.Oversize += ta.Oversize
				a.SkippedBusy += ta.SkippedBusy
				if upper[ta.Topic] || upper[name] {
					a.Labels = appendOnce(a.Labels, "drops upper bound")
				}
				if startLost[ta.Topic] || startLost[name] {
					a.Labels = appendOnce(a.Labels, "window start lost")
				}
				widen(ta.FirstNs, ta.LastNs)
				if ta.WindowToNs > ta.WindowFromNs {
					widen(ta.WindowFromNs, ta.WindowToNs)
					w, ok := windows[name]
					if !ok {
						w = [2]int64{ta.WindowFromNs, ta.WindowToNs}
					}
					windows[name] = [2]int64{min(w[0], ta.WindowFromNs), max(w[1], ta.WindowToNs)}
				}
				if ta.StartShort != "" {
					a.StartShort = ta.StartShort
				}
				if ta.EndShort != "" {
					a.EndShort = ta.EndShort
				}
			}
		}
		if !ok || d.StartNs == 0 {
			if mp := s.MCAP(); mp != nil {
				widen(int64(min(mp.Info().StartTime, 1<<63-1)), int64(min(mp.Info().EndTime, 1<<63-1)))
			} else if r := s.Pack(); r != nil {
				sum := r.Summary()
				widen(sum.FirstNs, max(sum.LastNs, s.EndNs()))
			}
		}
	}
	if o.FromNs != 0 {
		lo = max(lo, o.FromNs)
		if hi < lo {
			hi = lo
		}
	}
	if o.ToNs != 0 {
		hi = min(hi, o.ToNs)
		if lo > hi {
			return nil, fmt.Errorf("%w: --from / --to leave nothing of the dumps (%d..%d)", ErrUsage, lo, hi)
		}
	}
	if o.Title == "" {
		var names []string
		for _, s := range srcs {
			names = append(names, filepath.Base(s.Path))
		}
		o.Title = "edr-lite report: " + strings.Join(names, ", ")
	}
	a, err := NewAnalyzer(o.Options, lo, hi, triggers)
	if err != nil {
		return nil, err
	}
	ids := map[topicKey]int{}
	for _, s := range srcs {
		for i := range s.Topics() {
			t := &s.Topics()[i]
			k := topicKey{t.Name, t.Channel}
			if _, dup := ids[k]; dup {
				continue
			}
			name := mcap.TopicName(t.Name, t.Channel)
			if !selected(name, o.Topics, o.Exclude) {
				ids[k] = -1
				continue
			}
			spec := TopicSpec{Name: name, Type: typeName(t.Type), Account: accounts[name],
				AskedFromNs: windows[name][0], AskedToNs: windows[name][1]}
			if typ, ok := DumpTopicType(s, t); ok {
				spec.Schema, spec.HasSchema, spec.SchemaFrom = typ, true, "the dump"
			}
			ids[k] = a.Topic(spec)
		}
	}
	cache := &topicCache{ids: ids}
	msgs, err := openStreams(srcs, o.FromNs)
	if err != nil {
		return nil, err
	}
	defer msgs.close()
	var done uint64
	for {
		ok, err := msgs.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		m := msgs.message()
		done++
		if o.Progress != nil && done&0xffff == 0 {
			o.Progress(done, total)
		}
		if m.TimeNs < o.FromNs {
			continue
		}
		if o.ToNs != 0 && m.TimeNs > o.ToNs {
			continue
		}
		id, known := cache.lookup(m.Name, m.Channel)
		if !known {
			// a topic the index did not list (a scanned or damaged file)
			name := mcap.TopicName(m.Name, m.Channel)
			id = -1
			if selected(name, o.Topics, o.Exclude) && len(ids) < maxTopics {
				id = a.Topic(TopicSpec{Name: name, Account: accounts[name]})
			}
			ids[topicKey{strings.Clone(m.Name), strings.Clone(m.Channel)}] = id
		}
		if id < 0 {
			continue
		}
		gen := m.GenNs
		if m.DoneNs == 0 {
			gen = 0 // the message time is the producer time: no latency to measure
		}
		a.Message(id, m.TimeNs, gen, m.Data)
	}
	if o.Progress != nil {
		o.Progress(done, total)
	}
	for i := range files {
		if v := msgs.verified(i); v != "" {
			files[i].Verify = v
		}
	}
	r := a.Report()
	r.Files = files
	return r, nil
}

// typeName is how the page and the JSON name a topic's type: the schema
// name, else the message encoding ("" when not declared).
func typeName(t schema.Type) string {
	if t.IsZero() {
		return ""
	}
	if t.Schema.Name != "" {
		return t.Schema.Name
	}
	return t.MessageEncoding
}

// maxTopics bounds the topics a report tracks (a hostile file may name
// a new topic in every message).
const maxTopics = 4096

func selected(name string, topics, exclude []string) bool {
	return filter.Topics{Include: topics, Exclude: exclude}.Match(name)
}

func labelSet(v string) map[string]bool {
	m := map[string]bool{}
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			m[s] = true
		}
	}
	return m
}

func appendOnce(list []string, s string) []string {
	for _, v := range list {
		if v == s {
			return list
		}
	}
	return append(list, s)
}

// fileFacts reads a file's summary (a pack file's from its open reader:
// the index and the frame headers), and checks it with verify unless it
// was checked while it was read (pack: read.Verify is set).
func fileFacts(path string, src *dumpfile.Source, read File, verify bool) (File, error) {
	if r := src.Pack(); r != nil {
		sum, cs := r.Summary(), r.Codecs()
		f := File{Path: path, Format: dumpfile.FormatPack, Size: sum.Size, Indexed: sum.Indexed, Messages: sum.Messages,
			StoredBytes: cs.StoredBytes, RawBytes: cs.RawBytes, Writer: sum.Header.Writer, Verify: read.Verify}
		for c, n := range cs.Frames {
			if n > 0 {
				f.Compression = append(f.Compression, c.String())
			}
		}
		slices.Sort(f.Compression)
		if d, ok := src.DumpInfo(); ok && d.Writer != "" {
			f.Writer = d.Writer
		}
		return f, nil
	}
	in, err := dumpfile.ReadInfo(path)
	if err != nil {
		return File{}, err
	}
	f := File{Path: path, Format: in.Format, Size: in.Size, Indexed: in.Indexed, Compression: in.Compression,
		StoredBytes: in.StoredBytes, RawBytes: in.RawBytes, Writer: in.Writer, Messages: in.Messages, Verify: read.Verify}
	if !verify || f.Verify != "not checked" {
		return f, nil
	}
	v, err := dumpfile.Verify(path)
	if err != nil {
		f.Verify = "unreadable: " + err.Error()
		return f, nil
	}
	switch {
	case v.OK():
		f.Verify = "ok"
	default:
		f.Verify = fmt.Sprintf("%d problems", len(v.Problems))
		if !v.Complete {
			f.Verify += ", incomplete"
		}
		for i, p := range v.Problems {
			if i == 20 {
				f.Problems = append(f.Problems, fmt.Sprintf("… %d more", len(v.Problems)-20))
				break
			}
			f.Problems = append(f.Problems, fmt.Sprintf("offset %d: %s", p.Offset, p.Reason))
		}
	}
	return f, nil
}
