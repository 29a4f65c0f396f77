package dumpfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
	"github.com/edr-lite/edr-lite/media"
)

// Format names of camera files (package media, docs/media.md): read as
// Sources of one topic of foxglove.CompressedImage / CompressedVideo
// messages, written by Export (mp4) and ExportDir (jpeg-dir).
const (
	FormatJPEGDir = "jpeg-dir"
	FormatMP4     = "mp4"
)

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
	// StartNs (MP4), when HasStart, is the time of the movie's time 0;
	// otherwise the file's creation time (mvhd; 0 when it has none).
	StartNs  int64
	HasStart bool
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

// stream is the reader behind a Source that is neither pack nor MCAP (a
// camera file): one topic, messages in time order, generated.
type stream interface {
	// rewind starts over from the first message.
	rewind()
	// next fills m with the next message (valid until the next call).
	next(m *Message) (bool, error)
	close() error
}

// mediaSource builds the Source of a camera file: one topic of type typ,
// count messages, the last at endNs.
func mediaSource(path, format string, st stream, topic string, typ ingest.Type, count uint64, endNs int64, skipped []media.Skip) *Source {
	s := &Source{Path: path, Format: format, st: st, owned: true, endNs: endNs}
	s.topics = []SourceTopic{{Name: topic, Type: typ, Types: []TypeSpan{{Type: typ}}, Messages: count}}
	for _, sk := range skipped {
		s.notes = append(s.notes, fmt.Sprintf("%s: %s", filepath.Join(path, sk.Name), sk.Reason))
	}
	return s
}

// Notes returns what reading the Source left out (files of a JPEG folder
// that are not JPEGs or have no time), one line each naming the file.
func (s *Source) Notes() []string { return s.notes }

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
		st := &jpegStream{dir: d, topic: topic, frameID: frameID, typ: imageType()}
		return mediaSource(path, format, st, topic, st.typ, uint64(len(fr)), fr[len(fr)-1].TimeNs, d.Skipped()), nil
	case FormatMP4:
		mo := opts.MP4
		if mo.MaxBoxBytes <= 0 { // within the readers' memory limit (SetMaxMemory)
			mo.MaxBoxBytes = min(media.DefaultMaxBoxBytes, MaxMemory())
		}
		if mo.MaxSampleBytes <= 0 {
			mo.MaxSampleBytes = min(media.DefaultMaxSampleBytes, MaxMemory())
		}
		m, err := media.OpenMP4(path, mo)
		if err != nil {
			return nil, err
		}
		if opts.HasStart {
			mo.StartNs = opts.StartNs
		} else {
			mo.StartNs = m.CreationNs()
		}
		if mo.StartNs != 0 {
			m.Close()
			if m, err = media.OpenMP4(path, mo); err != nil {
				return nil, err
			}
		}
		st := &mp4Stream{m: m, topic: topic, frameID: frameID, format: m.Track().Codec.String(), typ: videoType()}
		var n uint64
		var end int64
		for { // one pass: every sample checked, counted, timed
			err := m.Next(&st.s)
			if err == io.EOF {
				break
			}
			if err != nil {
				m.Close()
				return nil, err
			}
			n++
			end = max(end, st.s.DTSNs)
		}
		m.Rewind()
		return mediaSource(path, format, st, topic, st.typ, n, end, nil), nil
	}
	return nil, fmt.Errorf("dumpfile: %q is not a camera format (want %s or %s)", format, FormatJPEGDir, FormatMP4)
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

// isJPEGDir reports whether path is a directory holding a .jpg or .jpeg
// file (reading its names only).
func isJPEGDir(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(256)
		for _, n := range names {
			if ext := strings.ToLower(filepath.Ext(n)); ext == ".jpg" || ext == ".jpeg" {
				return true, nil
			}
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// isMP4 recognises an ISO-BMFF file by its first box: ftyp.
func isMP4(b []byte) bool { return len(b) >= 8 && string(b[4:8]) == "ftyp" }

// mediaInfo summarises a camera file by reading it through (Open).
func mediaInfo(format string) func(path string) (*Info, error) {
	return func(path string) (*Info, error) {
		s, err := OpenMedia(path, format, MediaOptions{})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return sourceInfo(s)
	}
}

// sourceInfo counts what a Source holds, reading it through.
func sourceInfo(s *Source) (*Info, error) {
	in := &Info{Path: s.Path, Format: s.Format, Topics: []Topic{}, Triggers: []dumpinfo.Trigger{}, Skipped: s.notes}
	if st, err := os.Stat(s.Path); err == nil && !st.IsDir() {
		in.Size = st.Size()
	}
	rows := map[string]int{}
	err := s.InFileOrder(func(m *Message) error {
		k := topicName(m.Name + "#" + m.Channel)
		i, ok := rows[k]
		if !ok {
			i = len(in.Topics)
			rows[k] = i
			in.Topics = append(in.Topics, Topic{Name: k, FirstNs: m.TimeNs})
			in.Topics[i].setType(*m.Type, 0)
		}
		t := &in.Topics[i]
		t.Messages++
		t.Bytes += uint64(len(m.Data))
		t.LastNs = m.TimeNs
		in.Messages++
		in.Bytes += uint64(len(m.Data))
		return nil
	})
	if err != nil {
		return nil, err
	}
	in.setHeld()
	in.StartNs, in.EndNs = in.HeldStartNs, in.HeldEndNs
	return in, nil
}

// walkMedia walks a camera file's messages (walkPack's shape).
func walkMedia(format string) func(path string, fn func(m *Msg) error) error {
	return func(path string, fn func(m *Msg) error) error {
		s, err := OpenMedia(path, format, MediaOptions{})
		if err != nil {
			return err
		}
		defer s.Close()
		var m Msg
		return s.InFileOrder(func(pm *Message) error {
			m = Msg{Topic: topicName(pm.Name + "#" + pm.Channel), TimeNs: pm.TimeNs, GenNs: pm.GenNs, Data: pm.Data, Type: pm.Type}
			return fn(&m)
		})
	}
}

// errNotADump is what verify and recover say of a camera file.
func errNotADump(format string) error {
	return fmt.Errorf("dumpfile: a %s input is camera data, not a dump: nothing to verify or recover (import it: edr-lite import --format %s)", format, format)
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
