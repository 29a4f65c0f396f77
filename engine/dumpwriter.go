package engine

import (
	"fmt"

	"edr-lite/pack"
)

// DumpWriter writes one dump file. The engine calls it from the dumper
// goroutine only: messages in time order, then SetInfo, then Close (or
// Abort after a failure). It is the engine's only contact with the file
// format.
type DumpWriter interface {
	// WriteMessage appends one message of topic (the topic's info), with
	// its producer and capture times. data is not retained.
	WriteMessage(topic *TopicInfo, genNs, captureNs int64, data []byte) error
	// SetInfo records what makes the dump self-describing.
	SetInfo(info pack.DumpInfo) error
	// Close completes the file and makes it durable (fsync).
	Close() error
	// Abort releases resources after a failure; the caller removes the file.
	Abort() error
}

// DumpWriterOptions configure a DumpWriter.
type DumpWriterOptions struct {
	Compression string // "none", "lz4", "zstd"
	FrameSize   int    // data bytes per frame
	WriterName  string
	CreatedNs   int64
	// SizeHint is an upper bound of the file size (0 = unknown); the pack
	// writer preallocates and maps no more than this.
	SizeHint int64
}

// NewDumpWriter creates the file at path and returns its writer.
type NewDumpWriter func(path string, opts DumpWriterOptions) (DumpWriter, error)

// packWriter writes a pack file with the mmap writer, one FreeSync frame per
// FrameSize bytes of data. Message gen_ts is the producer time, done_ts the
// capture time; the frame time is its first capture time.
type packWriter struct {
	w     *pack.Writer
	f     *pack.Frame
	size  int
	frame uint64
}

func newPackWriter(path string, opts DumpWriterOptions) (DumpWriter, error) {
	var c pack.Compression
	switch opts.Compression {
	case "lz4":
		c = pack.CompressLZ4
	case "zstd":
		c = pack.CompressZstd
	}
	po := pack.WriterOptions{Writer: opts.WriterName, CreatedNs: opts.CreatedNs, Compression: c}
	if h := opts.SizeHint; h > 0 && h < 64<<20 {
		// Map and preallocate about what the dump needs, not 64 MiB.
		po.Window = int(h) + opts.FrameSize
	}
	w, err := pack.Create(path, po)
	if err != nil {
		return nil, fmt.Errorf("engine: creating dump %s: %w", path, err)
	}
	return &packWriter{w: w, f: pack.NewFrame(0, 0), size: opts.FrameSize}, nil
}

func (p *packWriter) WriteMessage(t *TopicInfo, genNs, captureNs int64, data []byte) error {
	if p.f.Len() == 0 {
		p.f.Reset(p.frame, captureNs)
		p.f.SetType(pack.FreeSync)
	}
	p.f.AddMetaWithData(t.Name, t.Channel, nil, genNs, captureNs, data)
	p.f.SetDoneTime(captureNs)
	if p.f.DataSize() >= p.size {
		return p.flushFrame()
	}
	return nil
}

func (p *packWriter) flushFrame() error {
	if p.f.Len() == 0 {
		return nil
	}
	err := p.w.WriteFrame(p.f)
	p.frame++
	p.f.Reset(p.frame, 0)
	return err
}

func (p *packWriter) SetInfo(info pack.DumpInfo) error { return p.w.SetDumpInfo(info) }

func (p *packWriter) Close() error {
	if err := p.flushFrame(); err != nil {
		p.w.Close()
		return err
	}
	return p.w.Close()
}

func (p *packWriter) Abort() error {
	p.w.Close() // returns the writer's first error; the file is removed by the caller
	return nil
}
