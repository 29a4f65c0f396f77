package dumpfile

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// Topic is one topic's figures.
type Topic struct {
	Name        string `json:"name"`
	Type        string `json:"type,omitempty"`
	Messages    uint64 `json:"messages"`
	Bytes       uint64 `json:"bytes"`
	FirstNs     int64  `json:"first_ns,omitempty"`
	LastNs      int64  `json:"last_ns,omitempty"`
	Overwritten uint64 `json:"overwritten"`
	Oversize    uint64 `json:"oversize"`
	SkippedBusy uint64 `json:"skipped_busy"`
	// LostAtSource: lost before reaching the recorder (shm overwrite,
	// kernel drop), as the source reported them.
	LostAtSource uint64 `json:"lost_at_source"`
}

// Info summarises one dump.
type Info struct {
	Path        string             `json:"path"`
	Format      string             `json:"format"`
	Size        int64              `json:"size"`
	Messages    uint64             `json:"messages"`
	Bytes       uint64             `json:"bytes"`
	StartNs     int64              `json:"start_ns"`
	EndNs       int64              `json:"end_ns"`
	Indexed     bool               `json:"indexed"`
	Frames      int                `json:"frames,omitempty"`
	Chunks      int                `json:"chunks,omitempty"`
	Compression []string           `json:"compression,omitempty"`  // codecs in use ("none", "lz4", "zstd")
	StoredBytes int64              `json:"stored_bytes,omitempty"` // pack: frame data as stored
	RawBytes    int64              `json:"raw_bytes,omitempty"`    // pack: the same, uncompressed
	Writer      string             `json:"writer,omitempty"`
	Topics      []Topic            `json:"topics"`
	Triggers    []dumpinfo.Trigger `json:"triggers"`
	Metadata    []string           `json:"metadata,omitempty"`
}

// Msg is one message of a walk.
type Msg struct {
	Topic  string
	TimeNs int64 // capture time (pack done_ts, MCAP log_time)
	GenNs  int64 // producer time, 0 when unknown
	Data   []byte
}

// ReadInfo summarises the dump at path.
func ReadInfo(path string) (*Info, error) {
	f, err := detectFile(path)
	if err != nil {
		return nil, err
	}
	return f.info(path)
}

// MessageTime is the time edr-lite orders a pack message by: its capture
// time (done_ts), else its producer time (gen_ts), else the frame time.
func MessageTime(m *pack.Message, frameNs int64) int64 {
	switch {
	case m.DoneTs != 0:
		return m.DoneTs
	case m.GenTs != 0:
		return m.GenTs
	}
	return frameNs
}

func packInfo(path string) (*Info, error) {
	r, err := pack.OpenWith(path, packOptions())
	if err != nil {
		return nil, err
	}
	defer r.Close()
	d, hasDI := r.DumpInfo()
	return packInfoOf(path, r.Summary(), r.Codecs(), d, hasDI), nil
}

// packInfoOf summarises a pack dump from its summary, codecs and dump
// information, however they were read (the file's index, a stream).
func packInfoOf(path string, s pack.Summary, cs pack.CodecStats, d dumpinfo.Info, hasDI bool) *Info {
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
	for _, t := range s.Topics {
		in.Topics = append(in.Topics, Topic{Name: topicName(t.Topic), Messages: t.Messages, Bytes: t.Bytes, FirstNs: t.FirstNs, LastNs: t.LastNs})
		in.Bytes += t.Bytes
	}
	if hasDI {
		in.addDumpInfo(d)
	}
	sort.SliceStable(in.Topics, func(i, j int) bool { return in.Topics[i].Name < in.Topics[j].Name })
	return in
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
		if a.Type != "" {
			t.Type = a.Type
		}
		t.Overwritten, t.Oversize, t.SkippedBusy = a.Overwritten, a.Oversize, a.SkippedBusy
		t.LostAtSource = a.LostAtSource
		if a.FirstNs != 0 {
			t.FirstNs, t.LastNs = a.FirstNs, a.LastNs
		}
	}
	in.Triggers = append(in.Triggers, d.Triggers...)
}

func mcapInfo(path string) (*Info, error) {
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
	for _, c := range mi.Channels {
		t := Topic{Name: c.Topic, Messages: c.Messages, Bytes: c.Bytes}
		if c.Schema != nil {
			t.Type = c.Schema.Name
		}
		in.Topics = append(in.Topics, t)
		in.Bytes += c.Bytes
	}
	for _, md := range mi.Metadata {
		in.Metadata = append(in.Metadata, md.Name)
	}
	d, ok, err := mcap.ReadDumpInfo(mi.Metadata)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ok {
		in.addDumpInfo(d)
	}
	sort.SliceStable(in.Topics, func(i, j int) bool { return in.Topics[i].Name < in.Topics[j].Name })
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
	r, err := mcap.Open(path, mcapOptions())
	if err != nil {
		return err
	}
	defer r.Close()
	var m Msg
	return r.Messages(func(c *mcap.Channel, mm *mcap.Message) error {
		m = Msg{Topic: c.Topic, TimeNs: int64(mm.LogTime), GenNs: int64(mm.PublishTime), Data: mm.Data}
		return fn(&m)
	})
}

func walkPack(path string, fn func(m *Msg) error) error {
	r, err := pack.OpenWith(path, packOptions())
	if err != nil {
		return err
	}
	defer r.Close()
	var m Msg
	return FromPack(r).InFileOrder(func(pm *Message) error {
		m = Msg{Topic: topicName(pack.Topic(pm.Name, pm.Channel)), TimeNs: pm.TimeNs, GenNs: pm.GenNs, Data: pm.Data}
		return fn(&m)
	})
}
