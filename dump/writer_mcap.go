package dump

import (
	"fmt"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
)

// mcapDump writes one dump as MCAP through mcap's PackWriter, so a
// recorder with format = "mcap" produces files Foxglove and the ROS 2
// tooling open directly. The Dumper manages NAME.tmp and the rename; the
// writer writes the file in place.
type mcapDump struct {
	w     *mcap.PackWriter
	types typeTracker
	held  []byte // reserved data moved aside before a type change
}

// NewMCAPWriter writes an MCAP dump (mcap.PackWriter, in place, with
// write(2): preallocated from the size hint, writeback started as it
// fills), its packed-struct topics transcoded to json for viewers
// (MCAPWriter(false)).
func NewMCAPWriter(path string, o WriterOptions) (Writer, error) {
	return newMCAPWriter(path, o, false, false)
}

// NewMCAPMmapWriter is NewMCAPWriter through mcap's mmap sink
// (mcap.FileOptions.Mmap): the slower path on the machines measured
// (docs/performance.md), kept as an option.
func NewMCAPMmapWriter(path string, o WriterOptions) (Writer, error) {
	return newMCAPWriter(path, o, false, true)
}

// MCAPWriter returns the NewWriterFunc of MCAP dumps; keepPacked writes
// packed-struct topics as they are (x-edr-packed with their layout)
// instead of transcoding them to json (mcap.Options.KeepPacked).
func MCAPWriter(keepPacked bool) NewWriterFunc {
	return func(path string, o WriterOptions) (Writer, error) { return newMCAPWriter(path, o, keepPacked, false) }
}

func newMCAPWriter(path string, o WriterOptions, keepPacked, mmap bool) (Writer, error) {
	fo := mcap.FileOptions{InPlace: true, Mmap: mmap, Prealloc: o.SizeHint}
	fo.KeepPacked = keepPacked
	fo.Library = o.WriterName
	fo.Compression = o.Compression
	if fo.Compression == "none" {
		fo.Compression = ""
	}
	if o.FrameSize > 0 {
		fo.ChunkSize = o.FrameSize
	}
	w, err := mcap.CreatePackWriter(path, fo)
	if err != nil {
		return nil, fmt.Errorf("mcap dump %s: %w", path, err)
	}
	return &mcapDump{w: w, types: newTypeTracker()}, nil
}

func (m *mcapDump) WriteMessage(t *ingest.TopicInfo, genNs, captureNs int64, data []byte) error {
	if m.types.changed(t) { // a new channel from this message on (types.go)
		if err := m.w.DeclareTopic(mcap.Topic{Name: t.Name, Channel: t.Channel, Type: t.Type}); err != nil {
			return err
		}
	}
	return m.w.Add(t.Name, t.Channel, nil, genNs, captureNs, data)
}

// Reserve returns room for the next message's payload in the open chunk
// (mcap.PackWriter.Reserve), so the dumper copies it there straight from
// the ring.
func (m *mcapDump) Reserve(n int) []byte { return m.w.Reserve(n) }

// Commit adds the payload last reserved as one message, in place. A type
// change declares the topic's new channel first, which may reuse the
// reserved bytes: the payload is moved aside before it.
func (m *mcapDump) Commit(t *ingest.TopicInfo, genNs, captureNs int64, data []byte) error {
	if m.types.changed(t) {
		m.held = append(m.held[:0], data...)
		data = m.held
		if err := m.w.DeclareTopic(mcap.Topic{Name: t.Name, Channel: t.Channel, Type: t.Type}); err != nil {
			return err
		}
	}
	return m.w.Add(t.Name, t.Channel, nil, genNs, captureNs, data)
}

func (m *mcapDump) SetInfo(info dumpinfo.Info) error { return m.w.SetDumpInfo(info) }
func (m *mcapDump) Close() error                     { return m.w.Close() }
func (m *mcapDump) Abort() error                     { return m.w.Abort() }
