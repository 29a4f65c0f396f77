package dump

import (
	"errors"
	"fmt"
	"os"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// Writer writes one dump file. The Dumper calls it from its goroutine
// only: messages in time order, then SetInfo, then Close (or Abort after a
// failure). It is the pipeline's only contact with a file format.
type Writer interface {
	// WriteMessage appends one message of topic (the topic's info), with
	// its producer and capture times. data is not retained.
	WriteMessage(topic *ingest.TopicInfo, genNs, captureNs int64, data []byte) error
	// SetInfo records what makes the dump self-describing.
	SetInfo(info dumpinfo.Info) error
	// Close completes the file and makes it durable (fsync).
	Close() error
	// Abort releases resources after a failure; the caller removes the file.
	Abort() error
}

// reserver is implemented by Writers that let the dumper copy a
// payload straight into the file's next frame: Reserve returns n writable
// bytes, Commit adds them (the slice Reserve returned) as one message. A
// reservation not committed is reused by the next Reserve.
type reserver interface {
	Reserve(n int) []byte
	Commit(topic *ingest.TopicInfo, genNs, captureNs int64, data []byte) error
}

// WriterOptions configure a Writer.
type WriterOptions struct {
	Compression string // "none", "lz4", "zstd"
	FrameSize   int    // data bytes per frame
	WriterName  string
	CreatedNs   int64
	// SizeHint is an upper bound of the file size (0 = unknown); the pack
	// writer preallocates and maps no more than this.
	SizeHint int64
}

// NewWriterFunc creates the file at path and returns its writer.
type NewWriterFunc func(path string, opts WriterOptions) (Writer, error)

// packWriter writes a pack file (mmap writer, write(2) path, or stream
// writer over a preallocated file), one FreeSync frame per
// FrameSize bytes of data. Message gen_ts is the producer time, done_ts the
// capture time; the frame time is its first capture time.
type packWriter struct {
	w       *pack.Writer
	scratch []byte // payloads the pending frame borrows (Reserve/Commit)
	// spare is the scratch of the frame written last: with pack's
	// AsyncWrite its writev may still be reading it, until the next frame
	// is written (the two alternate).
	spare []byte
	err   error    // sticky error of a frame written by Reserve
	file  *os.File // stream mode: the file, synced and closed by Close
	f     *pack.Frame
	size  int
	frame uint64
	types typeTracker
}

// NewPackMmapWriter writes a pack dump with pack's mmap writer (Create).
func NewPackMmapWriter(path string, opts WriterOptions) (Writer, error) {
	return openPackWriter(path, opts, false)
}

// NewPackStreamWriter writes a pack dump through pack's stream writer into a file
// preallocated (fallocate, keeping its size) from the size hint, then fsyncs.
func NewPackStreamWriter(path string, opts WriterOptions) (Writer, error) {
	return openPackWriter(path, opts, true)
}

// NewPackWriteWriter writes a pack dump with pack's write(2) path (Create's
// default): the file is preallocated from the size hint at the first
// write, writeback starts every 8 MiB (sync_file_range) so the closing fsync
// finds little left, and Close trims the preallocation and fsyncs. Each
// frame of large messages goes to the kernel as one writev straight from
// the scratch the messages were copied into. Where that path is not
// supported (not Linux) it is NewPackStreamWriter.
func NewPackWriteWriter(path string, opts WriterOptions) (Writer, error) {
	return newPackWriteWriter(path, opts, PackWriteTuning{})
}

// PackWriteTuning varies NewPackWriteWriter, to measure what each of its
// steps is worth (bench/, docs/performance.md). The zero value is
// NewPackWriteWriter.
type PackWriteTuning struct {
	// Async hands each frame's writev to the file's writer thread at a
	// lower I/O priority (pack.WriterOptions.AsyncWrite) while the dumper
	// copies the next frame out of the rings. Measured slower on the
	// project's 2-vCPU VM (docs/performance.md), so not the default.
	Async bool
	// MaxInFlight bounds the bytes whose writeback may be running
	// (pack.WriterOptions.MaxInFlight).
	MaxInFlight int64
}

// NewPackWriteWriterTuned is NewPackWriteWriter varied by t.
func NewPackWriteWriterTuned(t PackWriteTuning) NewWriterFunc {
	return func(path string, opts WriterOptions) (Writer, error) { return newPackWriteWriter(path, opts, t) }
}

func newPackWriteWriter(path string, opts WriterOptions, t PackWriteTuning) (Writer, error) {
	po := packOptions(opts) // Create's default is the write(2) path
	po.Prealloc = opts.SizeHint
	po.AsyncWrite = t.Async // packWriter keeps a written frame's scratch (spare)
	po.MaxInFlight = t.MaxInFlight
	w, err := pack.Create(path, po)
	if errors.Is(err, pack.ErrNotSupported) {
		return openPackWriter(path, opts, true)
	}
	if err != nil {
		return nil, fmt.Errorf("dump: creating %s: %w", path, err)
	}
	return &packWriter{w: w, f: pack.NewFrame(0, 0), size: opts.FrameSize, types: newTypeTracker()}, nil
}

// packOptions are the pack writer options for opts.
func packOptions(opts WriterOptions) pack.WriterOptions {
	var c pack.Compression
	switch opts.Compression {
	case "lz4":
		c = pack.CompressLZ4
	case "zstd":
		c = pack.CompressZstd
	}
	return pack.WriterOptions{Writer: opts.WriterName, CreatedNs: opts.CreatedNs, Compression: c}
}

func openPackWriter(path string, opts WriterOptions, stream bool) (Writer, error) {
	po := packOptions(opts)
	if stream {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("dump: creating %s: %w", path, err)
		}
		if err := preallocate(f, opts.SizeHint); err != nil {
			f.Close()
			return nil, fmt.Errorf("dump: preallocating %s: %w", path, err)
		}
		w, err := pack.NewStreamWriter(f, po)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("dump: creating %s: %w", path, err)
		}
		return &packWriter{w: w, file: f, f: pack.NewFrame(0, 0), size: opts.FrameSize, types: newTypeTracker()}, nil
	}
	po.Mmap = true
	if h := opts.SizeHint; h > 0 && h < 64<<20 {
		// Map and preallocate about what the dump needs, not 64 MiB.
		po.Window = int(h) + opts.FrameSize
	}
	w, err := pack.Create(path, po)
	if err != nil {
		return nil, fmt.Errorf("dump: creating %s: %w", path, err)
	}
	return &packWriter{w: w, f: pack.NewFrame(0, 0), size: opts.FrameSize, types: newTypeTracker()}, nil
}

func (p *packWriter) WriteMessage(t *ingest.TopicInfo, genNs, captureNs int64, data []byte) error {
	buf := p.Reserve(len(data))
	copy(buf, data)
	return p.Commit(t, genNs, captureNs, buf)
}

func (p *packWriter) flushFrame() error {
	if p.err != nil {
		return p.err
	}
	if p.f.Len() == 0 {
		return nil
	}
	err := p.w.WriteFrame(p.f)
	p.frame++
	p.f.Reset(p.frame, 0)
	// The frame no longer borrows its scratch, but its write may still be
	// reading it (AsyncWrite): the frame before it is done, so its scratch
	// is the next one's.
	p.scratch, p.spare = p.spare[:0], p.scratch
	if err != nil {
		p.err = err
	}
	return err
}

// Reserve returns n bytes at the end of the scratch the pending frame
// borrows from, writing that frame first when the scratch is full.
func (p *packWriter) Reserve(n int) []byte {
	if cap(p.scratch)-len(p.scratch) < n {
		p.flushFrame() // sticky error, returned by Commit
		if cap(p.scratch) < n {
			p.scratch = make([]byte, 0, max(n, 2*p.size))
		}
	}
	return p.scratch[len(p.scratch) : len(p.scratch)+n]
}

// Commit adds the payload last reserved as one message, without copying.
// The topic's type is recorded (a pack type section) before its first
// message and before the first message of another type, after the frames
// that hold the topic's earlier messages, so the section precedes exactly
// the messages it types.
func (p *packWriter) Commit(t *ingest.TopicInfo, genNs, captureNs int64, data []byte) error {
	if p.err != nil {
		return p.err
	}
	if p.types.changed(t) {
		var err error
		if data, err = p.setType(t, captureNs, data); err != nil {
			return err
		}
	}
	p.scratch = p.scratch[:len(p.scratch)+len(data)]
	if p.f.Len() == 0 {
		p.f.Reset(p.frame, captureNs)
		p.f.SetType(pack.FreeSync)
	}
	p.f.AddMetaBorrowed(t.Name, t.Channel, nil, genNs, captureNs, data)
	p.f.SetDoneTime(captureNs)
	if p.f.DataSize() >= p.size {
		return p.flushFrame()
	}
	return nil
}

// setType writes t's type section, first the pending frame when it holds
// messages of the topic (a type change: a topic's first type does not cut
// the frame), and returns where the reserved payload data now is: it lies
// in the scratch the pending frame borrows, and moves to the start of the
// scratch once that frame is written.
func (p *packWriter) setType(t *ingest.TopicInfo, captureNs int64, data []byte) ([]byte, error) {
	if p.f.HasTopic(t.Name, t.Channel) {
		held := append([]byte(nil), data...) // rare: a type change mid-dump
		if err := p.flushFrame(); err != nil {
			return nil, err
		}
		if cap(p.scratch) < len(held) {
			p.scratch = make([]byte, 0, max(len(held), 2*p.size))
		}
		data = p.scratch[:len(held)]
		copy(data, held)
	}
	if err := p.w.SetTopicType(t.Name, t.Channel, t.Type, captureNs); err != nil {
		p.err = err
		return nil, err
	}
	return data, nil
}

func (p *packWriter) SetInfo(info dumpinfo.Info) error { return p.w.SetDumpInfo(info) }

func (p *packWriter) Close() error {
	err := p.flushFrame()
	if cerr := p.w.Close(); err == nil {
		err = cerr
	}
	if p.file != nil {
		if err == nil {
			// Give back the preallocation past the end (KEEP_SIZE kept
			// the size; the estimate is an upper bound).
			err = p.file.Truncate(p.w.Offset())
		}
		if err == nil {
			err = p.file.Sync()
		}
		if cerr := p.file.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (p *packWriter) Abort() error {
	p.w.Close() // returns the writer's first error; the file is removed by the caller
	if p.file != nil {
		return p.file.Close()
	}
	return nil
}
