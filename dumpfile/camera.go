package dumpfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/edr-lite/edr-lite/dumpinfo"
)

// What both builds know of camera files: their format names, how they are
// recognised (so that the ECU build, which reads none, names them: camera_ecu.go)
// and the stream Sources they share with CAN logs. Reading and writing them
// is media.go's (not in the ECU build).

// Format names of camera files (package media, docs/media.md): read as
// Sources of one topic of foxglove.CompressedImage / CompressedVideo
// messages, written by Export (mp4) and ExportDir (jpeg-dir).
const (
	FormatJPEGDir = "jpeg-dir"
	FormatMP4     = "mp4"
)

// stream is the reader behind a Source that is neither pack nor MCAP (a
// camera file): one topic, messages in time order, generated.
type stream interface {
	// rewind starts over from the first message.
	rewind()
	// next fills m with the next message (valid until the next call).
	next(m *Message) (bool, error)
	close() error
}

// Notes returns what reading the Source left out (files of a JPEG folder
// that are not JPEGs or have no time), one line each naming the file.
// Damaged files are in Media().Damaged.
func (s *Source) Notes() []string { return s.notes }

// Media returns what reading a camera file found (damage, B-frames, the
// start time); nil for a dump, and always in the ECU build.
func (s *Source) Media() *MediaFacts { return s.media }

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

// infoOf summarises a file that open reads as a stream Source.
func infoOf(open func(path string) (*Source, error)) func(path string) (*Info, error) {
	return func(path string) (*Info, error) {
		s, err := open(path)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return sourceInfo(s)
	}
}

// sourceInfo counts what a Source holds, reading it through.
func sourceInfo(s *Source) (*Info, error) {
	in := &Info{Path: s.Path, Format: s.Format, Topics: []Topic{}, Triggers: []dumpinfo.Trigger{}, Skipped: s.notes, Damaged: s.Damaged()}
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
	if s.hasDI { // a log's frame topics decoded by --dbc: their accounting
		in.addDumpInfo(s.info)
	}
	in.setHeld()
	in.StartNs, in.EndNs = in.HeldStartNs, in.HeldEndNs
	return in, nil
}

// walkOf walks the messages of a file that open reads as a stream Source.
func walkOf(open func(path string) (*Source, error)) func(path string, fn func(m *Msg) error) error {
	return func(path string, fn func(m *Msg) error) error {
		s, err := open(path)
		if err != nil {
			return err
		}
		defer s.Close()
		return walkSource(s, fn)
	}
}

// errNotADump is what verify and recover say of a camera file.
func errNotADump(format string) error {
	if format == FormatMP4 { // recover takes it; verify does not
		return fmt.Errorf("dumpfile: an mp4 input is camera data, not a dump: nothing to verify (edr-lite recover salvages one cut short; import it: edr-lite import --format mp4)")
	}
	if f := lookup(format); f != nil && (format == FormatCandump || format == FormatASC) {
		return fmt.Errorf("dumpfile: a %s is CAN frames, not a dump: nothing to verify or recover (import it: edr-lite import --format %s)", f.title, format)
	}
	return fmt.Errorf("dumpfile: a %s input is camera data, not a dump: nothing to verify or recover (import it: edr-lite import --format %s)", format, format)
}
