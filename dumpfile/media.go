//go:build !ecu

package dumpfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
	"github.com/edr-lite/edr-lite/media"
)

// cameraFormats are the rows of the formats table for camera files.
var cameraFormats = []format{
	{Format: Format{Name: FormatJPEGDir}, title: "JPEG folder", dir: isJPEGDir,
		open: openJPEGDir, info: mediaInfo(FormatJPEGDir), walk: walkMedia(FormatJPEGDir), exportDir: exportJPEGDir},
	{Format: Format{Name: FormatMP4}, title: "MP4", sniff: isMP4, hint: `has "ftyp" at byte 4`,
		open: openMP4, info: mediaInfo(FormatMP4), walk: walkMedia(FormatMP4), export: exportMP4, recover: recoverMP4},
}

// NotBuilt says why format is not in this build, nil when it is (or is
// no format at all): the full build has every format of the table (the
// ECU build has no camera files, camera_ecu.go).
func NotBuilt(format string) error { return nil }

// notBuiltFile and notBuiltDir: every file the full build recognises has
// its row in the table.
func notBuiltFile(string, []byte) error { return nil }
func notBuiltDir(string) error          { return nil }

// MediaOptions say how a JPEG folder or an MP4 file is read as a Source.
// The zero value is what Open uses.
type MediaOptions struct {
	// Topic of the messages; "" is defaults.MediaTopicPrefix + the base
	// name without extension ("front/" -> "camera/front").
	Topic string
	// FrameID is the messages' frame_id; "" is the topic.
	FrameID string
	// JPEG: where the frames' times come from (media.JPEGOptions; no
	// Sources: defaults.JPEGTimeSources).
	JPEG media.JPEGOptions
	// StartNs (MP4), when HasStart, is the time of the movie's time 0.
	// StartMtime takes it from the file's modification time instead: the
	// time the last frame it holds ends (time 0 = the modification time
	// less the end of that frame), since a recorder writes its file last
	// when the recording ends. Otherwise it is the file's creation time
	// (mvhd); a file without one (0, as ffmpeg writes) is ErrNoStart.
	StartNs    int64
	HasStart   bool
	StartMtime bool
	// MP4 bounds the demuxer (media.MP4Options; StartNs is set from the
	// above; unset bounds are media's defaults, at most MaxMemory). A
	// JPEG file is read whole, up to JPEG.MaxFileBytes (likewise).
	MP4 media.MP4Options
}

// MediaTopic is the topic a camera file at path gets by default.
func MediaTopic(path string) string {
	base := filepath.Base(filepath.Clean(path))
	return defaults.MediaTopicPrefix + strings.TrimSuffix(base, filepath.Ext(base))
}

// DefaultJPEGSources parses defaults.JPEGTimeSources.
func DefaultJPEGSources() []media.TimeSource {
	var out []media.TimeSource
	for _, s := range strings.Split(defaults.JPEGTimeSources, ",") {
		ts, err := media.ParseTimeSource(s)
		if err != nil {
			panic("BUG: defaults.JPEGTimeSources: " + err.Error())
		}
		out = append(out, ts)
	}
	return out
}

// ErrNoStart: an MP4 file says no time for its start (its creation time
// is 0) and none was given.
var ErrNoStart = errors.New("no creation time")

// MediaFacts is what reading a camera file found beyond its messages.
type MediaFacts struct {
	// StartNs is the time of an MP4's time 0 and StartFrom where it came
	// from: "--start", "the file's creation time", "the file's
	// modification time".
	StartNs   int64
	StartFrom string
	// Cut: the MP4 is cut short (what it lost); nil when whole.
	Cut *media.Cut
	// Reordered: the MP4's video has B-frames (frames presented in another
	// order than decoded), which Foxglove's CompressedVideo cannot play.
	Reordered bool
	// CutJPEGs are JPEGs read with image data but cut short, BrokenJPEGs
	// those read with image data but broken after it (media.ErrDamagedJPEG);
	// EmptyJPEGs those skipped for holding no image data.
	CutJPEGs, BrokenJPEGs, EmptyJPEGs int
	// Damaged says, one line per file naming it, what is damaged and what
	// of it was read.
	Damaged []string
}

// Lost is a short count of the damage for a summary line ("" when none):
// "cut short: 89 of 150 samples lost", "1 JPEG cut short, read as it is,
// 1 JPEG without image data, skipped".
func (f *MediaFacts) Lost() string {
	var parts []string
	if c := f.Cut; c != nil {
		switch {
		case c.Lost > 0 && c.AtLeast:
			parts = append(parts, fmt.Sprintf("cut short: at least %d samples lost", c.Lost))
		case c.Lost > 0:
			parts = append(parts, fmt.Sprintf("cut short: %d of %d samples lost", c.Lost, c.Read+c.Lost))
		case c.AtLeast:
			parts = append(parts, "cut short inside a fragment: its samples lost")
		default:
			parts = append(parts, "cut short after its last sample: none lost")
		}
	}
	if f.CutJPEGs > 0 {
		parts = append(parts, fmt.Sprintf("%d %s cut short, read as %s", f.CutJPEGs, plural(f.CutJPEGs, "JPEG", "JPEGs"),
			plural(f.CutJPEGs, "it is", "they are")))
	}
	if f.BrokenJPEGs > 0 {
		parts = append(parts, fmt.Sprintf("%d %s damaged after the image data, read as %s", f.BrokenJPEGs,
			plural(f.BrokenJPEGs, "JPEG", "JPEGs"), plural(f.BrokenJPEGs, "it is", "they are")))
	}
	if f.EmptyJPEGs > 0 {
		parts = append(parts, fmt.Sprintf("%d %s without image data, skipped", f.EmptyJPEGs, plural(f.EmptyJPEGs, "JPEG", "JPEGs")))
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// mediaSource builds the Source of a camera file: one topic of type typ,
// count messages, the last at endNs.
func mediaSource(path, format string, st stream, topic string, typ ingest.Type, count uint64, endNs int64, skipped []media.Skip,
	facts *MediaFacts) *Source {
	s := &Source{Path: path, Format: format, st: st, owned: true, endNs: endNs, media: facts}
	s.topics = []SourceTopic{{Name: topic, Type: typ, Types: []TypeSpan{{Type: typ}}, Messages: count}}
	for _, sk := range skipped {
		if !sk.Damaged {
			s.notes = append(s.notes, fmt.Sprintf("%s: %s", filepath.Join(path, sk.Name), sk.Reason))
		}
	}
	return s
}

// Damaged returns what is damaged in a camera file (a JPEG or an MP4 cut
// short), one line per file naming it and saying what was read; nil for
// a dump or a whole file.
func (s *Source) Damaged() []string {
	if s.media == nil {
		return nil
	}
	return s.media.Damaged
}

func openJPEGDir(path string) (*Source, error) { return OpenMedia(path, FormatJPEGDir, MediaOptions{}) }
func openMP4(path string) (*Source, error)     { return OpenMedia(path, FormatMP4, MediaOptions{}) }

// OpenMedia opens a camera file (FormatJPEGDir, FormatMP4) as a Source
// with opts. A JPEG folder with no usable frame is an error listing why
// its files were skipped; an MP4 is read through once (media.MP4: every
// sample checked, counted and timed) before the Source is returned, so a
// damaged or hostile file fails here with a *media.BoxError.
func OpenMedia(path, format string, opts MediaOptions) (*Source, error) {
	topic := opts.Topic
	if topic == "" {
		topic = MediaTopic(path)
	}
	frameID := opts.FrameID
	if frameID == "" {
		frameID = topic
	}
	switch format {
	case FormatJPEGDir:
		jo := opts.JPEG
		if jo.MaxFileBytes <= 0 { // within the readers' memory limit (SetMaxMemory)
			jo.MaxFileBytes = min(media.DefaultMaxJPEGBytes, MaxMemory())
		}
		if len(jo.Sources) == 0 {
			jo.Sources = DefaultJPEGSources()
		}
		d, err := media.OpenJPEGDir(path, jo)
		if err != nil {
			return nil, err
		}
		fr := d.Frames()
		if len(fr) == 0 {
			return nil, noFrames(path, d.Skipped())
		}
		facts := &MediaFacts{}
		for _, f := range fr {
			if f.Cut != "" {
				if strings.HasPrefix(f.Cut, strings.TrimPrefix(media.ErrCutJPEG.Error(), "media: ")) {
					facts.CutJPEGs++
				} else {
					facts.BrokenJPEGs++
				}
				facts.Damaged = append(facts.Damaged, fmt.Sprintf("%s: %s; read as it is (a viewer shows the part it holds)",
					filepath.Join(path, f.Name), f.Cut))
			}
		}
		for _, sk := range d.Skipped() {
			if sk.Damaged {
				facts.EmptyJPEGs++
				facts.Damaged = append(facts.Damaged, fmt.Sprintf("%s: %s; skipped",
					filepath.Join(path, sk.Name), strings.TrimPrefix(sk.Reason, "media: ")))
			}
		}
		st := &jpegStream{dir: d, topic: topic, frameID: frameID, typ: imageType()}
		return mediaSource(path, format, st, topic, st.typ, uint64(len(fr)), fr[len(fr)-1].TimeNs, d.Skipped(), facts), nil
	case FormatMP4:
		mo := opts.MP4
		if mo.MaxBoxBytes <= 0 { // within the readers' memory limit (SetMaxMemory)
			mo.MaxBoxBytes = min(media.DefaultMaxBoxBytes, MaxMemory())
		}
		if mo.MaxSampleBytes <= 0 {
			mo.MaxSampleBytes = min(media.DefaultMaxSampleBytes, MaxMemory())
		}
		mo.StartNs, mo.AcceptCut = 0, true
		m, err := media.OpenMP4(path, mo)
		if err != nil {
			return nil, err
		}
		st := &mp4Stream{m: m, topic: topic, frameID: frameID, format: m.Track().Codec.String(), typ: videoType()}
		facts, n, end, err := readMP4(path, m, &st.s, opts)
		if err != nil {
			m.Close()
			return nil, err
		}
		return mediaSource(path, format, st, topic, st.typ, n, end, nil, facts), nil
	}
	return nil, fmt.Errorf("dumpfile: %q is not a camera format (want %s or %s)", format, FormatJPEGDir, FormatMP4)
}

// readMP4 reads an MP4 opened with StartNs 0 through once (every sample
// checked, counted and timed, up to a cut), places it in time (opts: the
// given start, the file's modification time, or its creation time) and
// rewinds it. It returns what it found, the samples and the last decode
// time.
func readMP4(path string, m *media.MP4, s *media.Sample, opts MediaOptions) (*MediaFacts, uint64, int64, error) {
	facts := &MediaFacts{}
	var n uint64
	var minRel, maxDTS, maxPTS, endRel int64 // movie times
	for {
		err := m.Next(s)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, 0, err
		}
		if n == 0 {
			minRel, maxDTS, maxPTS = min(s.DTSNs, s.PTSNs), s.DTSNs, s.PTSNs
		} else if s.PTSNs < maxPTS {
			facts.Reordered = true
		}
		n++
		minRel = min(minRel, s.DTSNs, s.PTSNs)
		maxDTS, maxPTS = max(maxDTS, s.DTSNs), max(maxPTS, s.PTSNs)
		if e, ok := addTime(s.PTSNs, s.DurationNs); ok {
			endRel = max(endRel, e)
		}
	}
	if c := m.Cut(); c != nil {
		facts.Cut = c
		facts.Damaged = append(facts.Damaged, fmt.Sprintf("%s: %s", path, c))
	}
	if n == 0 { // nothing to place in time
		return facts, 0, 0, nil
	}
	switch {
	case opts.HasStart:
		facts.StartNs, facts.StartFrom = opts.StartNs, "--start"
	case opts.StartMtime:
		st, err := os.Stat(path)
		if err != nil {
			return nil, 0, 0, err
		}
		facts.StartNs, facts.StartFrom = st.ModTime().UnixNano()-endRel, "the file's modification time"
	case m.CreationNs() != 0:
		facts.StartNs, facts.StartFrom = m.CreationNs(), "the file's creation time"
	default:
		return nil, 0, 0, fmt.Errorf("%s: %w (its mvhd box says 0, as ffmpeg writes unless told otherwise), so its frames "+
			"have no date: import it with --start T (the time of the movie's start, RFC 3339 or ns since the epoch) or "+
			"--start mtime (the file's modification time, taken as the end of its last frame)", path, ErrNoStart)
	}
	first, ok1 := addTime(facts.StartNs, minRel)
	_, ok2 := addTime(facts.StartNs, max(maxDTS, maxPTS))
	if !ok1 || !ok2 {
		return nil, 0, 0, fmt.Errorf("%s: with its start at %d ns (%s) its times overflow", path, facts.StartNs, facts.StartFrom)
	}
	if first <= 0 {
		return nil, 0, 0, fmt.Errorf("%s: with its start at %s (%s) its first frame is at %s, not after 1970-01-01 "+
			"(a dump reads time 0 as unknown): give a later --start", path, fmtNs(facts.StartNs), facts.StartFrom, fmtNs(first))
	}
	m.SetStartNs(facts.StartNs)
	return facts, n, facts.StartNs + maxDTS, nil
}

// addTime adds two times, ok false on overflow.
func addTime(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

// noFrames is the error of a JPEG folder without a frame: why each file
// was left out (the first few).
func noFrames(path string, skipped []media.Skip) error {
	var why []string
	for i, s := range skipped {
		if i == 4 {
			why = append(why, fmt.Sprintf("and %d more", len(skipped)-i))
			break
		}
		why = append(why, s.Name+": "+s.Reason)
	}
	if len(why) == 0 {
		return fmt.Errorf("%s: no .jpg or .jpeg file", path)
	}
	return fmt.Errorf("%s: no JPEG with a time (%s)", path, strings.Join(why, "; "))
}

func imageType() ingest.Type {
	return ingest.Type{MessageEncoding: ingest.EncodingProtobuf, Schema: ingest.Schema{Name: media.SchemaCompressedImage,
		Encoding: ingest.SchemaProtobuf, Data: media.CompressedImageDescriptor()}}
}

func videoType() ingest.Type {
	return ingest.Type{MessageEncoding: ingest.EncodingProtobuf, Schema: ingest.Schema{Name: media.SchemaCompressedVideo,
		Encoding: ingest.SchemaProtobuf, Data: media.CompressedVideoDescriptor()}}
}

// jpegStream gives a JPEG folder's frames as foxglove.CompressedImage
// messages at their times (capture and producer time alike).
type jpegStream struct {
	dir            *media.JPEGDir
	topic, frameID string
	typ            ingest.Type
	i              int
	raw, buf       []byte
}

func (s *jpegStream) rewind() { s.i = 0 }

func (s *jpegStream) next(m *Message) (bool, error) {
	fr := s.dir.Frames()
	if s.i >= len(fr) {
		return false, nil
	}
	f := &fr[s.i]
	var err error
	if s.raw, err = s.dir.ReadFrame(s.i, s.raw[:0]); err != nil {
		return false, fmt.Errorf("%s: %w", filepath.Join(s.dir.Dir(), f.Name), err)
	}
	s.i++
	s.buf = media.AppendCompressedImage(s.buf[:0], f.TimeNs, s.frameID, "jpeg", s.raw)
	*m = Message{Name: s.topic, GenNs: f.TimeNs, DoneNs: f.TimeNs, TimeNs: f.TimeNs, Data: s.buf, Type: &s.typ}
	return true, nil
}

func (s *jpegStream) close() error { return nil }

// mp4Stream gives an MP4 track's samples as foxglove.CompressedVideo
// messages in decode order: the decode time is the capture time (so a
// reader sorting by it keeps B-frames decodable), the presentation time
// the producer time and the message's timestamp.
type mp4Stream struct {
	m              *media.MP4
	topic, frameID string
	format         string
	typ            ingest.Type
	s              media.Sample
	buf            []byte
}

func (s *mp4Stream) rewind() { s.m.Rewind() }

func (s *mp4Stream) next(m *Message) (bool, error) {
	err := s.m.Next(&s.s)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s.buf = media.AppendCompressedVideo(s.buf[:0], s.s.PTSNs, s.frameID, s.format, s.s.Data)
	*m = Message{Name: s.topic, GenNs: s.s.PTSNs, DoneNs: s.s.DTSNs, TimeNs: s.s.DTSNs, Data: s.buf, Type: &s.typ}
	return true, nil
}

func (s *mp4Stream) close() error { return s.m.Close() }

// mediaInfo summarises a camera file by reading it through (Open).
func mediaInfo(format string) func(path string) (*Info, error) {
	return infoOf(func(path string) (*Source, error) { return OpenMedia(path, format, MediaOptions{}) })
}

// walkMedia walks a camera file's messages (walkPack's shape).
func walkMedia(format string) func(path string, fn func(m *Msg) error) error {
	return walkOf(func(path string) (*Source, error) { return OpenMedia(path, format, MediaOptions{}) })
}

// recoverMP4 salvages an MP4 cut short (or whole): every sample of its
// H.264/H.265 track wholly before the cut, remuxed by media.MP4Writer
// into a valid MP4 (the track's timescale, decode and presentation times,
// key frames and creation time kept) at out, written as out.tmp, synced
// and renamed. Other tracks (audio) are not carried: Notes names them.
func recoverMP4(in, out string) (*RecoverResult, error) {
	mo := media.MP4Options{AcceptCut: true, MaxBoxBytes: min(media.DefaultMaxBoxBytes, MaxMemory()),
		MaxSampleBytes: min(media.DefaultMaxSampleBytes, MaxMemory())}
	m, err := media.OpenMP4(in, mo)
	if err != nil {
		return nil, err
	}
	origin := m.CreationNs()
	if origin != 0 { // the movie's time 0 stays its creation time
		m.SetStartNs(origin)
	}
	defer m.Close()
	tr := m.Track()
	r := &RecoverResult{Format: FormatMP4}
	for _, t := range m.Tracks() {
		if t.ID != tr.ID {
			r.Notes = append(r.Notes, fmt.Sprintf("track %d (%s, %s) not carried: recover writes the %s video track only", t.ID, t.Handler, t.Format, tr.Codec))
		}
	}
	if _, err := os.Stat(out); err == nil {
		return nil, fmt.Errorf("%s exists; refusing to overwrite", out)
	}
	tmp := out + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	err = func() error {
		w, err := media.NewMP4Writer(f, tr.Codec, media.MP4WriterOptions{Timescale: tr.Timescale, OriginNs: origin})
		if err != nil {
			return err
		}
		var s media.Sample
		for {
			err := m.Next(&s)
			if err == io.EOF {
				break
			}
			if err != nil {
				w.Close()
				return err
			}
			if err := w.Write(&s); err != nil {
				w.Close()
				return err
			}
			r.Records++
		}
		if r.Records == 0 {
			w.Close()
			return fmt.Errorf("%s: no sample of its %s track is wholly in the file: nothing to salvage", in, tr.Codec)
		}
		if err := w.Close(); err != nil {
			return err
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, out)
	}
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	r.Messages = uint64(r.Records)
	if c := m.Cut(); c != nil {
		msgs := c.Lost
		if c.AtLeast && c.Lost == 0 {
			msgs = -1
		}
		r.LostRecords, r.LostBytes, r.LostMessages = int(c.Lost), c.Size-c.Offset, uint64(c.Lost)
		r.Lost = []Lost{{Offset: c.Offset, Length: c.Size - c.Offset, Records: int(c.Lost), Messages: msgs, Reason: c.String()}}
	}
	return r, nil
}

// mediaTopicOf returns the one topic of src whose type is the protobuf
// message schema (a camera export writes one topic).
func mediaTopicOf(src *Source, schema string) (SourceTopic, error) {
	var found []SourceTopic
	var all []string
	for _, t := range src.Topics() {
		all = append(all, t.String())
		for _, ts := range t.Types {
			if ts.Type.Schema.Name == schema && ts.Type.MessageEncoding == ingest.EncodingProtobuf {
				found = append(found, t)
				break
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return SourceTopic{}, fmt.Errorf("%s: no topic of type %s (protobuf) among %s", src.Path, schema, strings.Join(all, ", "))
	}
	var names []string
	for _, t := range found {
		names = append(names, t.String())
	}
	return SourceTopic{}, fmt.Errorf("%s: %d topics of type %s (%s): choose one with --topics", src.Path, len(found), schema, strings.Join(names, ", "))
}

// eachOf calls fn for the messages of topic t in src, in time order.
func eachOf(src *Source, t SourceTopic, fn func(m *Message) error) error {
	msgs := NewMessages(src)
	for {
		ok, err := msgs.Next()
		if err != nil || !ok {
			return err
		}
		if m := msgs.Message(); m.Name == t.Name && m.Channel == t.Channel {
			if err := fn(m); err != nil {
				return err
			}
		}
	}
}

// exportMP4 remuxes the src's one foxglove.CompressedVideo topic into an
// MP4 (media.MP4Writer, decode times derived from the presentation times
// and the order of the messages). w must seek (a file): the moov box goes
// after the samples, their mdat's size before them.
func exportMP4(src *Source, w io.Writer, opts ExportOptions) (*ConvertReport, error) {
	ws, ok := w.(io.WriteSeeker)
	if !ok {
		return nil, errors.New("dumpfile: an MP4 is written to a file, not a stream (its sizes are written after its samples)")
	}
	t, err := mediaTopicOf(src, media.SchemaCompressedVideo)
	if err != nil {
		return nil, err
	}
	rep := &ConvertReport{Topics: 1}
	var mw *media.MP4Writer
	var codec media.Codec
	var format string
	var v media.CompressedVideo
	var smp media.Sample
	err = eachOf(src, t, func(m *Message) error {
		if err := media.DecodeCompressedVideo(m.Data, &v); err != nil {
			return fmt.Errorf("%s: %s: message at %d: %w", src.Path, t.String(), m.TimeNs, err)
		}
		if mw == nil {
			c, err := media.ParseCodec(v.Format)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", src.Path, t.String(), err)
			}
			if mw, err = media.NewMP4Writer(ws, c, media.MP4WriterOptions{DeriveDTS: true, OriginNs: opts.OriginNs}); err != nil {
				return err
			}
			codec, format = c, v.Format
		} else if v.Format != format {
			return fmt.Errorf("%s: %s: message at %d: format %q after %q (one codec per MP4)", src.Path, t.String(), m.TimeNs, v.Format, format)
		}
		smp = media.Sample{PTSNs: v.TimestampNs, Key: media.KeyFrame(codec, v.Data), Data: v.Data}
		if err := mw.Write(&smp); err != nil {
			return fmt.Errorf("%s: %s: message at %d: %w", src.Path, t.String(), m.TimeNs, err)
		}
		rep.Messages++
		rep.Bytes += uint64(len(v.Data))
		return nil
	})
	if err == nil && mw == nil {
		err = fmt.Errorf("%s: %s has no message", src.Path, t.String())
	}
	if mw != nil {
		if cerr := mw.Close(); err == nil {
			err = cerr
		}
	}
	rep.Written, _ = ws.Seek(0, io.SeekCurrent)
	return rep, err
}

// exportJPEGDir writes the src's one foxglove.CompressedImage topic to dir
// (which must be new or empty), one file per image named by its time
// (media.JPEGDirWriter): a JPEG folder written from one reads back at the
// same times, byte for byte. On error the files written are removed.
func exportJPEGDir(src *Source, dir string, _ ExportOptions) (*ConvertReport, error) {
	t, err := mediaTopicOf(src, media.SchemaCompressedImage)
	if err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%s is not empty; refusing to write images into it", dir)
	}
	jw, err := media.CreateJPEGDir(dir)
	if err != nil {
		return nil, err
	}
	rep := &ConvertReport{Topics: 1, Written: 0}
	var names []string
	var v media.CompressedImage
	err = eachOf(src, t, func(m *Message) error {
		if err := media.DecodeCompressedImage(m.Data, &v); err != nil {
			return fmt.Errorf("%s: %s: message at %d: %w", src.Path, t.String(), m.TimeNs, err)
		}
		name, err := jw.Write(v.TimestampNs, v.Format, v.Data)
		if err != nil {
			return fmt.Errorf("%s: %s: message at %d: %w", src.Path, t.String(), m.TimeNs, err)
		}
		names = append(names, name)
		rep.Messages++
		rep.Bytes += uint64(len(v.Data))
		rep.Written += int64(len(v.Data))
		return nil
	})
	if err == nil {
		err = jw.Close()
	}
	if err != nil {
		for _, n := range names {
			os.Remove(filepath.Join(dir, n))
		}
		return nil, err
	}
	rep.Files = []OutFile{{Table: t.String(), Path: dir, Rows: int64(rep.Messages), Size: rep.Written}}
	return rep, nil
}
