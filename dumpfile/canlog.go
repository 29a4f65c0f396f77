package dumpfile

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/edr-lite/edr-lite/can"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

// Format names of CAN log files (package can, docs/can.md): read as
// Sources of one frame topic per bus (and its error topic), written by
// Export from the CAN frame topics of any dump.
const (
	FormatCandump = "candump"
	FormatASC     = "asc"
)

// isCandump recognises a candump log by its first line's start:
// "(SECONDS." (the time in parentheses).
func isCandump(b []byte) bool {
	if len(b) < 3 || b[0] != '(' {
		return false
	}
	for i, c := range b[1:] {
		switch {
		case c >= '0' && c <= '9':
		case c == '.' && i > 0:
			return true
		default:
			return false
		}
	}
	return true // "(1436509": the first bytes of a time
}

// isASC recognises a Vector ASC file by its header's first line.
func isASC(b []byte) bool {
	return bytes.HasPrefix(b, []byte("date ")) || bytes.HasPrefix(b, []byte("base hex")) || bytes.HasPrefix(b, []byte("base dec"))
}

func newLogReader(format string, r io.Reader) can.LogReader {
	if format == FormatASC {
		return can.NewASCReader(r)
	}
	return can.NewCandumpReader(r)
}

// canBus is one bus of a log file: its topics and whether it is CAN FD.
type canBus struct {
	name, topic      string
	frames, errs     int // indexes into the Source's topics, -1 for none
	fd               bool
	frameTyp, errTyp ingest.Type
}

// canStream gives a log file's frames as messages on their buses' topics,
// in file order (which a first pass checked is time order).
type canStream struct {
	path, format string
	f            *os.File
	r            can.LogReader
	buses        map[string]*canBus
	topics       []SourceTopic
	rec          can.Record
	buf          [can.FDFrameSize]byte
}

// OpenCANLog opens a candump log or an ASC file (FormatCandump,
// FormatASC) as a Source: each bus is the topic can/BUS (edr.can.Frame,
// or edr.can.FDFrame when the bus has a CAN FD frame), its error frames
// can/BUS/errors. The file is read through once first: a line that is not
// a frame, or a time that goes back, is an error naming the file and line.
// With SetDBCs, that pass also finds what the DBCs decode (its topics
// follow the buses'), as Open does for a dump.
func OpenCANLog(path, format string) (*Source, error) {
	if format != FormatCandump && format != FormatASC {
		return nil, fmt.Errorf("dumpfile: %q is not a CAN log format (want %s or %s)", format, FormatCandump, FormatASC)
	}
	st := &canStream{path: path, format: format, buses: map[string]*canBus{}}
	dec := newCANDecoding(path, nil)
	var dm Message
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := newLogReader(format, f)
	var order []*canBus
	var counts = map[string][2]uint64{}
	var n uint64
	var last int64
	var rec can.Record
	for {
		err := r.Next(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if n > 0 && rec.TimeNs < last {
			return nil, fmt.Errorf("%s: line %d: the time goes back %d µs: a log is read in time order (sort it by time first)",
				path, r.Line(), (last-rec.TimeNs)/1000)
		}
		last = rec.TimeNs
		n++
		b := st.buses[string(rec.Bus)]
		if b == nil {
			if len(st.buses) >= 4096 {
				return nil, fmt.Errorf("%s: line %d: more than 4096 buses", path, r.Line())
			}
			b = &canBus{name: string(rec.Bus), topic: defaults.CANTopicPrefix + string(rec.Bus), frames: -1, errs: -1}
			st.buses[b.name] = b
			order = append(order, b)
		}
		c := counts[b.name]
		if rec.Frame.Flags&can.ErrorFrame != 0 {
			c[1]++
		} else {
			c[0]++
			fd := rec.Frame.Flags&can.FD != 0 || rec.Frame.Len > 8
			b.fd = b.fd || fd
			if dec != nil { // the frame as its topic gives it, to the one decoding path
				typ := &can.FrameType
				if fd {
					typ = &can.FDFrameType
				}
				n := rec.Frame.Encode(st.buf[:], fd)
				dm = Message{Name: b.topic, TimeNs: rec.TimeNs, DoneNs: rec.TimeNs, Data: st.buf[:n], Type: typ}
				dec.observe(&dm)
			}
		}
		counts[b.name] = c
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no CAN frame in the %s file", path, format)
	}
	for _, b := range order {
		topic := defaults.CANTopicPrefix + b.name
		b.frameTyp, b.errTyp = can.FrameType, can.FrameType
		if b.fd {
			b.frameTyp = can.FDFrameType
		}
		c := counts[b.name]
		if c[0] > 0 {
			b.frames = len(st.topics)
			st.topics = append(st.topics, SourceTopic{Name: topic, Type: b.frameTyp, Types: []TypeSpan{{Type: b.frameTyp}}, Messages: c[0]})
		}
		if c[1] > 0 {
			b.errs = len(st.topics)
			st.topics = append(st.topics, SourceTopic{Name: topic + defaults.CANErrorSuffix, Type: b.errTyp,
				Types: []TypeSpan{{Type: b.errTyp}}, Messages: c[1]})
		}
	}
	s := &Source{Path: path, Format: format, st: st, owned: true, endNs: last, topics: st.topics}
	if dec.decodes() {
		dec.publish(s)
	}
	if sk := r.Skipped(); sk > 0 {
		s.notes = append(s.notes, fmt.Sprintf("%s: %d lines of events other than frames (statistics, status)", path, sk))
	}
	for bus, d := range r.Dropped() {
		s.notes = append(s.notes, fmt.Sprintf("%s: the log says %d frames of %s were dropped before it was written", path, d, bus))
	}
	if a, ok := r.(*can.ASCReader); ok && !a.HasDate() {
		s.notes = append(s.notes, fmt.Sprintf("%s: no date line: times count from 1970-01-01", path))
	}
	slices.Sort(s.notes)
	return s, nil
}

func (s *canStream) rewind() {
	if s.f != nil {
		s.f.Close()
		s.f, s.r = nil, nil
	}
}

func (s *canStream) next(m *Message) (bool, error) {
	if s.r == nil {
		f, err := OpenRegular(s.path)
		if err != nil {
			return false, err
		}
		s.f, s.r = f, newLogReader(s.format, f)
	}
	err := s.r.Next(&s.rec)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", s.path, err)
	}
	b := s.buses[string(s.rec.Bus)]
	if b == nil {
		return false, fmt.Errorf("%s: line %d: bus %s was not in the file when it was opened", s.path, s.r.Line(), s.rec.Bus)
	}
	fr := &s.rec.Frame
	t, typ, fd := b.frames, &b.frameTyp, b.fd
	if fr.Flags&can.ErrorFrame != 0 {
		t, typ, fd = b.errs, &b.errTyp, false
	}
	if t < 0 {
		return false, fmt.Errorf("%s: line %d: the file changed since it was opened", s.path, s.r.Line())
	}
	n := fr.Encode(s.buf[:], fd)
	*m = Message{Name: s.topics[t].Name, DoneNs: s.rec.TimeNs, TimeNs: s.rec.TimeNs, Data: s.buf[:n], Type: typ}
	return true, nil
}

func (s *canStream) close() error {
	if s.f != nil {
		return s.f.Close()
	}
	return nil
}

func openCandump(path string) (*Source, error) { return OpenCANLog(path, FormatCandump) }
func openASC(path string) (*Source, error)     { return OpenCANLog(path, FormatASC) }

// canInfo summarises a log file by reading it through.
func canInfo(format string) func(path string) (*Info, error) {
	return infoOf(func(path string) (*Source, error) { return OpenCANLog(path, format) })
}

// walkCAN walks a log file's messages (walkPack's shape).
func walkCAN(format string) func(path string, fn func(m *Msg) error) error {
	return walkOf(func(path string) (*Source, error) { return OpenCANLog(path, format) })
}

// busOf names the bus of a frame topic: the topic without the can/
// prefix and, for error frames, the /errors suffix; '#' joins a channel;
// white space becomes '_' (a log's bus is one word).
func busOf(t SourceTopic, errFrame bool) string {
	name := t.Name
	if errFrame {
		name = strings.TrimSuffix(name, defaults.CANErrorSuffix)
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 && isIDTopic(name[i+1:]) {
		name = name[:i] // a per-ID topic (can.IDTopic): the bus is its parent
	}
	name = strings.TrimPrefix(name, defaults.CANTopicPrefix)
	if t.Channel != "" {
		name += "#" + t.Channel
	}
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			return '_'
		}
		return r
	}, name)
}

// isIDTopic reports whether s is the last part of a per-ID topic: 0x and
// hex digits, an x after a 29-bit one.
func isIDTopic(s string) bool {
	s, ok := strings.CutPrefix(s, "0x")
	s = strings.TrimSuffix(s, "x")
	if !ok || s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// canTopics returns the frame topics of src, and notes naming the others.
func canTopics(src *Source) (map[string]SourceTopic, []string) {
	frames := map[string]SourceTopic{}
	var others []string
	for _, t := range src.Topics() {
		isFrames := len(t.Types) > 0
		for _, ts := range t.Types {
			if ok, _ := can.IsFrameType(ts.Type); !ok {
				isFrames = false
			}
		}
		if isFrames {
			frames[mcapTopicKey(t)] = t
		} else {
			others = append(others, t.String())
		}
	}
	var notes []string
	if len(others) > 0 && len(frames) > 0 {
		notes = append(notes, fmt.Sprintf("%d topics are not CAN frames and were left out: %s", len(others), strings.Join(others, ", ")))
	}
	return frames, notes
}

func mcapTopicKey(t SourceTopic) string { return t.Name + "#" + t.Channel }

// eachFrame calls fn for every CAN frame of src in time order, with the
// frame's bus; a frame topic's message that is not a frame is an error
// naming it.
func eachFrame(src *Source, format string, fn func(timeNs int64, bus string, f *can.Frame) error) (*ConvertReport, error) {
	frames, notes := canTopics(src)
	if len(frames) == 0 {
		var all []string
		for _, t := range src.Topics() {
			all = append(all, t.String())
		}
		return nil, fmt.Errorf("%s: no topic of CAN frames (%s or %s) to write as %s, among %s", src.Path,
			can.FrameTypeName, can.FDFrameTypeName, format, strings.Join(all, ", "))
	}
	rep := &ConvertReport{Topics: len(frames), Written: -1, Notes: notes}
	msgs := NewMessages(src)
	var f can.Frame
	for {
		ok, err := msgs.Next()
		if err != nil {
			return rep, err
		}
		if !ok {
			return rep, nil
		}
		m := msgs.Message()
		t, isFrame := frames[m.Name+"#"+m.Channel]
		if !isFrame {
			continue
		}
		if err := f.Decode(m.Data); err != nil {
			return rep, fmt.Errorf("%s: %s: message at %d: %w", src.Path, t.String(), m.TimeNs, err)
		}
		if err := fn(m.TimeNs, busOf(t, f.Flags&can.ErrorFrame != 0), &f); err != nil {
			return rep, err
		}
		rep.Messages++
		rep.Bytes += uint64(f.Len)
	}
}

// exportCandump writes src's CAN frame topics as a candump log, in time
// order.
func exportCandump(src *Source, w io.Writer, _ ExportOptions) (*ConvertReport, error) {
	var line []byte
	var written int64
	rep, err := eachFrame(src, FormatCandump, func(ns int64, bus string, f *can.Frame) error {
		if ns < 0 {
			return fmt.Errorf("%s: a frame at %d, before 1970: not a candump time", src.Path, ns)
		}
		line = can.AppendCandump(line[:0], ns, bus, f)
		n, err := w.Write(line)
		written += int64(n)
		return err
	})
	if rep != nil {
		rep.Written = written
	}
	return rep, err
}

// exportASC writes src's CAN frame topics as a Vector ASC file: channel N
// is the bus canN-1 where the buses are so named, else the buses in name
// order (a comment line names each).
func exportASC(src *Source, w io.Writer, _ ExportOptions) (*ConvertReport, error) {
	frames, _ := canTopics(src)
	set := map[string]bool{}
	for _, t := range frames {
		set[busOf(t, false)] = true
		set[busOf(t, true)] = true
	}
	var names []string
	for n := range set {
		names = append(names, n)
	}
	channels := ascChannels(names)
	chOf := map[string]int{}
	for i, n := range channels {
		chOf[n] = i + 1
	}
	if len(channels) > 255 {
		return nil, fmt.Errorf("%s: %d buses: an ASC file has at most 255 channels", src.Path, len(channels))
	}
	cw := &countWriter{w: w}
	var aw *can.ASCWriter
	rep, err := eachFrame(src, FormatASC, func(ns int64, bus string, f *can.Frame) error {
		if aw == nil {
			var err error
			if aw, err = can.NewASCWriter(cw, ns, channels); err != nil {
				return fmt.Errorf("%s: %w", src.Path, err)
			}
		}
		return aw.Write(ns, chOf[bus], f)
	})
	if rep != nil {
		rep.Written = cw.n
		if aw != nil && aw.Rounded > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%d frame times rounded to microseconds (ASC holds no more)", aw.Rounded))
		}
		if aw != nil && aw.ErrorDetails > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%d error frames written as a bare ErrorFrame: ASC keeps neither their class nor their details", aw.ErrorDetails))
		}
	}
	return rep, err
}

// ascChannels orders bus names as ASC channels: can0, can1, ... at their
// numbers when every name is canN (gaps filled with unused names), else in
// name order.
func ascChannels(names []string) []string {
	slices.Sort(names)
	idx := map[int]string{}
	top := -1
	for _, n := range names {
		i, err := strconv.Atoi(strings.TrimPrefix(n, "can"))
		if !strings.HasPrefix(n, "can") || err != nil || i < 0 || i > 254 || "can"+strconv.Itoa(i) != n {
			return names
		}
		idx[i] = n
		top = max(top, i)
	}
	out := make([]string, top+1)
	for i := range out {
		out[i] = "can" + strconv.Itoa(i)
	}
	return out
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
