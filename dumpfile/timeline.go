package dumpfile

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"sort"

	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// Timeline is one dump or several, of any format Open reads, read as one
// stream of typed messages in message-time order: what edr-lite's replay,
// merge, filter, split and export read. Messages iterates over it with
// topic and time filters.
//
// A Timeline is not safe for concurrent use; each Iterator reads its
// files through the Sources' readers, so one Iterator at a time.
type Timeline struct {
	srcs  []*Source
	owned bool
}

// OpenTimeline opens every path with Open (a pack or MCAP dump, a JSON
// lines export, a JPEG folder, an MP4 file) and reads them as one
// Timeline; Close closes them. On error the files opened are closed.
func OpenTimeline(paths ...string) (*Timeline, error) {
	if len(paths) == 0 {
		return nil, errors.New("dumpfile: a timeline needs at least one file")
	}
	srcs, err := OpenAll(paths)
	if err != nil {
		return nil, err
	}
	return &Timeline{srcs: srcs, owned: true}, nil
}

// NewTimeline reads Sources already open (Open, OpenMedia, OpenSalvaged)
// as one Timeline. It does not own them: Close leaves them open.
func NewTimeline(srcs ...*Source) *Timeline { return &Timeline{srcs: srcs} }

// Sources returns the Timeline's files, in the order given.
func (t *Timeline) Sources() []*Source { return t.srcs }

// Topics returns the topics of every file, each once (by name and
// channel, in the order they are first met): messages summed, types in
// the order the files list them.
func (t *Timeline) Topics() []SourceTopic {
	var out []SourceTopic
	at := map[topicKey]int{}
	for _, s := range t.srcs {
		for _, st := range s.Topics() {
			k := topicKey{st.Name, st.Channel}
			i, ok := at[k]
			if !ok {
				at[k] = len(out)
				st.Types = append([]TypeSpan(nil), st.Types...)
				out = append(out, st)
				continue
			}
			o := &out[i]
			o.Messages += st.Messages
			for _, ts := range st.Types {
				if !o.Types[len(o.Types)-1].Type.Equal(ts.Type) {
					o.Types = append(o.Types, ts)
				}
			}
		}
	}
	return out
}

// Close closes the files OpenTimeline opened (nothing for NewTimeline's).
func (t *Timeline) Close() error {
	if !t.owned {
		return nil
	}
	t.owned = false
	var errs []error
	for _, s := range t.srcs {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// TopicFilter selects topics by globs (path.Match syntax): those matching
// an Include glob (every topic when there is none) and no Exclude glob. A
// glob is tried against the topic as edr-lite spells it ("name", or
// "name#channel") and against its name alone, so "vehicle/*" selects
// "vehicle/speed#left". It is the selection of the command's --topics and
// --exclude, matched by the same code.
type TopicFilter struct {
	Include, Exclude []string
}

// All reports whether the filter keeps every topic (no glob).
func (f TopicFilter) All() bool { return filter.Topics(f).All() }

// Match reports whether the filter keeps topic ("name" or "name#channel").
func (f TopicFilter) Match(topic string) bool { return filter.Topics(f).Match(topic) }

// MatchName is Match for a topic given as name and channel.
func (f TopicFilter) MatchName(name, channel string) bool {
	return filter.Topics(f).MatchName(name, channel)
}

// A ReadOption configures Timeline.Messages.
type ReadOption func(*readOptions) error

type readOptions struct {
	topics   TopicFilter
	from, to int64
	skip     func(*SkipError)
}

// WithTopics keeps the topics matching any of globs (TopicFilter.Include);
// given more than once, the lists add up.
func WithTopics(globs ...string) ReadOption {
	return func(o *readOptions) error {
		if err := checkGlobs("WithTopics", globs); err != nil {
			return err
		}
		o.topics.Include = append(o.topics.Include, globs...)
		return nil
	}
}

// WithoutTopics leaves out the topics matching any of globs
// (TopicFilter.Exclude), also those WithTopics keeps.
func WithoutTopics(globs ...string) ReadOption {
	return func(o *readOptions) error {
		if err := checkGlobs("WithoutTopics", globs); err != nil {
			return err
		}
		o.topics.Exclude = append(o.topics.Exclude, globs...)
		return nil
	}
}

func checkGlobs(option string, globs []string) error {
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("dumpfile: %s: glob %q: %w", option, g, err)
		}
	}
	return nil
}

// From keeps the messages whose time is ns or later (the reading starts
// with an exact seek there: Iterator.SeekTime).
func From(ns int64) ReadOption {
	return func(o *readOptions) error { o.from = ns; return nil }
}

// To keeps the messages whose time is ns or earlier: the reading ends at
// the first message after it.
func To(ns int64) ReadOption {
	return func(o *readOptions) error { o.to = ns; return nil }
}

// SkipDamaged makes the iteration go on past damage instead of ending
// with an error: report is called with each SkipError (the file, the
// offset, the cause and where reading went on), then reading goes on
// where the format allows. A pack file's reader resynchronises on the
// next intact record as recover does (pack.ReaderOptions.SkipDamaged),
// with or without an index; a type section that does not decode is
// reported and its topic reads as raw bytes from there. An MCAP file
// (OpenSalvaged reads a damaged one through a salvaged copy) or a camera
// file ends at its damage, reported, and the other files go on. report
// must not be nil.
func SkipDamaged(report func(*SkipError)) ReadOption {
	return func(o *readOptions) error {
		if report == nil {
			return errors.New("dumpfile: SkipDamaged: report is nil")
		}
		o.skip = report
		return nil
	}
}

// SkipError is damage an iteration with SkipDamaged read past.
type SkipError struct {
	Path string // the file
	// Offset is where the damage is (the damaged frame or record), -1
	// when the reader does not say.
	Offset int64
	// ResumeAt is where reading went on (the next intact record), -1
	// when the rest of the file was left out.
	ResumeAt int64
	// Frames is how many pack frames were lost (exact when the file's
	// index survived), -1 when not known or not a pack file.
	Frames int
	Err    error // the reader's error: *pack.CorruptError, *mcap.CorruptError, ...
}

func (e *SkipError) Error() string {
	what := "the rest of the file left out"
	if e.ResumeAt >= 0 {
		what = fmt.Sprintf("skipped to offset %d", e.ResumeAt)
	}
	if e.Frames > 0 {
		what += fmt.Sprintf(", %d frame(s) lost", e.Frames)
	}
	return fmt.Sprintf("%s: %v (%s)", e.Path, e.Err, what)
}

func (e *SkipError) Unwrap() error { return e.Err }

// Messages returns an Iterator over the messages of the Timeline that
// opts select, in message time order (see Messages for how ties and
// files out of order are read). It starts from the first message (From:
// the first at or after that time); the Timeline's files are read from
// their current position on, so an Iterator in use is abandoned when
// another is made. An invalid option (a malformed glob, To before From)
// is an error naming it.
func (t *Timeline) Messages(opts ...ReadOption) (*Iterator, error) {
	o := readOptions{from: math.MinInt64, to: math.MaxInt64}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.to < o.from {
		return nil, fmt.Errorf("dumpfile: To(%d) is before From(%d)", o.to, o.from)
	}
	it := &Iterator{t: t, o: o, m: NewMessages(t.srcs...), match: map[topicKey]bool{}}
	it.m.skip = it.skipped
	for _, s := range t.srcs {
		if s.pack != nil { // a pack reader reads past damage itself (or not: SetSkipDamaged's default)
			s.pack.SetSkipDamaged(o.skip != nil || skipDamaged.Load() != nil)
		}
	}
	if o.skip != nil {
		it.seen = make([]packSkips, len(t.srcs))
		for i, s := range t.srcs {
			if s.pack != nil {
				sk := s.pack.Skipped()
				it.seen[i] = packSkips{regions: sk.Regions, types: sk.Types, frameOff: -1}
			}
		}
	}
	return it, nil
}

// packSkips is what an Iterator with SkipDamaged has reported of one pack
// file's reader so far.
type packSkips struct {
	regions, types int
	frameOff       int64 // the frame last looked at
}

// reportPackSkips reports what the pack reader of source i skipped since
// the last look (all: at the end), once per frame it reads.
func (it *Iterator) reportPackSkips(i int, all bool) {
	s, seen := it.t.srcs[i], &it.seen[i]
	if s.pack == nil {
		return
	}
	if !all {
		off := it.m.cur.off
		if off == seen.frameOff {
			return
		}
		seen.frameOff = off
	}
	sk := s.pack.Skipped()
	for _, l := range sk.Lost[min(seen.regions, len(sk.Lost)):] {
		e := &SkipError{Path: s.Path, Offset: l.Offset, ResumeAt: l.Offset + l.Length, Frames: l.Frames,
			Err: &pack.CorruptError{Path: s.Path, Offset: l.Offset, Reason: l.Reason, Err: pack.ErrCorrupt}}
		if e.ResumeAt >= s.pack.Size() {
			e.ResumeAt = -1
		}
		it.o.skip(e)
	}
	if n := sk.Regions - max(seen.regions, len(sk.Lost)); n > 0 { // past the regions the reader lists one by one
		it.o.skip(&SkipError{Path: s.Path, Offset: -1, ResumeAt: -1, Frames: -1,
			Err: fmt.Errorf("%d more damaged region(s) (%s)", n, sk.String())})
	}
	if sk.Types > seen.types {
		it.o.skip(&SkipError{Path: s.Path, Offset: -1, ResumeAt: -1, Frames: -1,
			Err: fmt.Errorf("%d type section(s) left out: their topics read as raw bytes from there", sk.Types-seen.types)})
	}
	seen.regions, seen.types = sk.Regions, sk.Types
}

// Iterator reads the messages a Timeline's Messages selects, in message
// time order, from its first or from a SeekTime.
//
// It is not safe for concurrent use.
type Iterator struct {
	t       *Timeline
	o       readOptions
	m       *Messages
	match   map[topicKey]bool // the topic filter's answer per name and channel
	started bool
	err     error       // sticky: io.EOF at the end, or the error that ended it
	seen    []packSkips // SkipDamaged: per source
}

// Next returns the next message, or io.EOF after the last one. The
// Message and its bytes are valid until the next call to Next or SeekTime;
// its Type (and the schema bytes in it) until the Timeline's files are
// closed. An error names the file, the offset and what is damaged
// (without SkipDamaged the iteration ends there: every later call
// returns it).
func (it *Iterator) Next() (*Message, error) {
	if !it.started {
		if err := it.SeekTime(it.o.from); err != nil {
			return nil, err
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	for {
		ok, err := it.m.Next()
		if err != nil {
			it.err = err
			return nil, err
		}
		if !ok || it.m.Time() > it.o.to {
			if it.seen != nil {
				for i := range it.seen {
					it.reportPackSkips(i, true)
				}
			}
			it.err = io.EOF
			return nil, io.EOF
		}
		if it.seen != nil {
			it.reportPackSkips(it.m.Source(), false)
		}
		m := it.m.Message()
		if it.o.topics.All() || it.selected(m.Name, m.Channel) {
			return m, nil
		}
	}
}

// selected reports whether the filter keeps topic name#channel, asking it
// once per topic.
func (it *Iterator) selected(name, channel string) bool {
	if ok, seen := it.match[topicKey{name, channel}]; seen {
		return ok
	}
	ok := it.o.topics.MatchName(name, channel)
	it.match[topicKey{name, channel}] = ok
	return ok
}

// SeekTime moves to the first selected message whose time is ns or later
// (never before From), in every file: exact, whatever the frames or
// chunks hold. Next then goes on from there; a SeekTime after the end or an
// error (with SkipDamaged) starts again.
func (it *Iterator) SeekTime(ns int64) error {
	it.started = true
	it.err = nil
	if err := it.m.SeekTime(max(ns, it.o.from)); err != nil {
		it.err = err
		return err
	}
	return nil
}

// Source returns the file the message Next returned last came from; nil
// when Next has returned none since the start or the last SeekTime.
func (it *Iterator) Source() *Source {
	if it.m.cur == nil {
		return nil
	}
	return it.t.srcs[it.m.Source()]
}

// skipped handles an error of a source's reader that SkipDamaged reads
// past but the reader itself did not (a pack reader skips damaged frames
// on its own): it reports it and moves a pack reader to the next frame
// its index lists, or ends that source. ok says whether the source has a
// message again.
func (it *Iterator) skipped(mi *msgIter, err error) (ok bool, _ error) {
	if it.o.skip == nil {
		return false, err
	}
	path := it.t.srcs[mi.src].Path
	for err != nil {
		e := &SkipError{Path: path, Offset: -1, ResumeAt: -1, Frames: -1, Err: err}
		var pe *pack.CorruptError
		var me *mcap.CorruptError
		switch {
		case errors.As(err, &pe):
			e.Offset = pe.Offset
		case errors.As(err, &me) && me.File != "":
			e.Offset = me.Offset
		}
		if mi.r != nil {
			e.ResumeAt = nextFrame(mi.r, mi.r.Tell())
		}
		it.o.skip(e)
		if e.ResumeAt < 0 {
			return false, nil
		}
		if serr := mi.r.SeekFrame(e.ResumeAt); serr != nil {
			return false, nil
		}
		mi.f.Reset(0, 0)
		mi.i = -1
		ok, err = mi.next(it.m.from)
	}
	return ok, nil
}

// nextFrame returns the offset of the first frame r's index (or scan)
// lists after off, -1 when there is none.
func nextFrame(r *pack.Reader, off int64) int64 {
	offs := r.FrameOffsets()
	i := sort.Search(len(offs), func(i int) bool { return offs[i] > off })
	if i == len(offs) {
		return -1
	}
	return offs[i]
}

// Topic returns the message's topic as edr-lite spells it: "name", or
// "name#channel" when there is a channel.
func (m *Message) Topic() string { return mcap.TopicName(m.Name, m.Channel) }
