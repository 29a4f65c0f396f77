package dumpfile

import (
	"bufio"
	"fmt"
	"io"
	"sort"

	"github.com/edr-lite/edr-lite/pack"
)

// openStream checks that r holds a pack dump (MCAP needs the whole file:
// its reader seeks) and returns its StreamReader.
func openStream(name string, r io.Reader) (*pack.StreamReader, error) {
	br := bufio.NewReader(r)
	b, _ := br.Peek(magicLen)
	f, err := detect(name, b)
	if err != nil {
		return nil, err
	}
	if f.Name != FormatPack {
		return nil, fmt.Errorf("%s: a %s file cannot be read from a stream (its reader needs the whole file): save it to a file first", name, f.title)
	}
	s, err := pack.NewStreamReaderWith(br, packOptions())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// WalkFrom is Walk over a pack dump read from r front to back (a pipe,
// standard input): every message in file order, memory bounded by the
// largest frame. name labels errors.
func WalkFrom(name string, r io.Reader, fn func(m *Msg) error) error {
	s, err := openStream(name, r)
	if err != nil {
		return err
	}
	defer s.Close()
	defer func() { reportSkipped(name, s.Skipped()) }()
	var f pack.Frame
	var pm Message
	var m Msg
	// Types as their sections pass; the dump information naming the
	// types of an untyped (1.0) file comes at the end of a stream.
	types := newTypeOf(pack.NewTypeIndex(nil), nil)
	seen := 0
	for {
		if err := s.ReadInto(&f); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("%s: %w", name, err)
		}
		for ts := s.Types(); seen < len(ts); seen++ {
			types.idx.Add(ts[seen])
		}
		for i := 0; i < f.Len(); i++ {
			packMessage(&pm, &f, i, &types, s.FrameOffset())
			m = Msg{Topic: topicName(pack.Topic(pm.Name, pm.Channel)), TimeNs: pm.TimeNs, GenNs: pm.GenNs, Data: pm.Data, Type: pm.Type}
			if err := fn(&m); err != nil {
				return err
			}
		}
	}
}

// ReadInfoFrom is ReadInfo over a pack dump read from r front to back: the
// same figures, gathered frame by frame (what a file's index holds) and
// from the metadata sections at its end. name is the Info's Path.
func ReadInfoFrom(name string, r io.Reader) (*Info, error) {
	s, err := openStream(name, r)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	type key struct{ name, channel string }
	topics := map[key]*pack.TopicSummary{}
	sum := pack.Summary{Header: s.Header()}
	var f pack.Frame
	for {
		if err := s.ReadInto(&f); err != nil {
			if err == io.EOF {
				break
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		t, end := f.Time(), max(f.Time(), f.DoneTime())
		if sum.Frames == 0 || t < sum.FirstNs {
			sum.FirstNs = t
		}
		if sum.Frames == 0 || end > sum.LastNs {
			sum.LastNs = end
		}
		sum.Frames++
		for i := 0; i < f.Len(); i++ {
			m := f.Message(i)
			ts := m.GenTs
			if ts == 0 {
				ts = t
			}
			k := key{m.Name, m.Channel}
			ta := topics[k]
			if ta == nil {
				ta = &pack.TopicSummary{Topic: pack.Topic(m.Name, m.Channel), Name: m.Name, Channel: m.Channel, FirstNs: ts, LastNs: ts}
				topics[k] = ta
			}
			ta.Messages++
			ta.Bytes += uint64(len(m.Meta) + len(f.Data(i)))
			ta.FirstNs, ta.LastNs = min(ta.FirstNs, ts), max(ta.LastNs, ts)
			sum.Messages++
		}
	}
	for _, t := range topics {
		sum.Topics = append(sum.Topics, *t)
	}
	sort.Slice(sum.Topics, func(i, j int) bool {
		a, b := sum.Topics[i], sum.Topics[j]
		return a.Name < b.Name || (a.Name == b.Name && a.Channel < b.Channel)
	})
	sum.Metadata, sum.Indexed, sum.Size = s.MetadataNames(), s.Indexed(), s.Tell()
	d, hasDI := s.DumpInfo()
	in := packInfoOf(name, sum, s.Codecs(), d, hasDI, s.Types())
	in.setAttachments(s.Attachments())
	return in, nil
}
