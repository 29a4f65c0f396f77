package mcap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/edr-lite/edr-lite/internal/durable"
)

// DefaultWindow is the size of the file mapping the FileWriter writes
// through when FileOptions.Window is zero.
const DefaultWindow = 32 << 20

// FileOptions configure a FileWriter.
type FileOptions struct {
	Options
	// Mmap writes through a sliding shared mapping of the file instead of
	// buffered write(2) calls (Linux only; elsewhere write(2) is used). The
	// write(2) path is the default: on the machines measured it is the
	// faster one (docs/performance.md, MCAP dumps).
	Mmap bool
	// Window (with Mmap) is the size of each mapped window of the file
	// (rounded up to pages); DefaultWindow when <= 0.
	Window int
	// Prealloc (write(2) path) is the step in which the file is
	// preallocated ahead of the data; 64 MiB when 0.
	Prealloc int64
	// InPlace writes path itself: Close syncs it but does not rename, and
	// Abort leaves the file to the caller. For callers that manage their
	// own NAME.tmp and rename (the recorder's dumper).
	InPlace bool
}

// FileWriter writes one MCAP dump file: to NAME.tmp with write(2) calls of
// 1 MiB and more, the file preallocated ahead and its writeback started as
// it fills (or through a sliding read-write mapping, FileOptions.Mmap), then on Close syncs it and renames it
// to NAME, so a file without ".tmp" is always complete (or, with InPlace,
// writes and syncs NAME and leaves renaming to the caller). It embeds the
// Writer: AddTopic, WriteMessage, AddMetadata... write into the file.
//
// A FileWriter is not safe for concurrent use.
type FileWriter struct {
	*Writer
	f       *os.File
	sink    *mmapSink
	bw      *durable.Buffered
	d       *durable.File
	path    string
	tmp     string
	inPlace bool
	done    bool
}

// Create starts writing path (as path+".tmp" until Close).
func Create(path string, opt FileOptions) (*FileWriter, error) {
	if opt.Window <= 0 {
		opt.Window = DefaultWindow
	}
	tmp := path + ".tmp"
	if opt.InPlace {
		tmp = path
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	fw := &FileWriter{f: f, path: path, tmp: tmp, inPlace: opt.InPlace}
	var out io.Writer
	if opt.Mmap {
		fw.sink, err = newMmapSink(f, opt.Window)
		if errors.Is(err, ErrNotSupported) {
			opt.Mmap, err = false, nil
		}
		if err != nil {
			return nil, errors.Join(err, f.Close(), os.Remove(tmp))
		}
		out = fw.sink
	}
	if !opt.Mmap {
		fw.sink = nil
		fw.d = durable.New(f, tmp, durable.Options{Prealloc: opt.Prealloc})
		fw.bw = durable.NewBuffered(fw.d) // chunks written from the Writer's buffers
		out = fw.bw
	}
	fw.Writer, err = NewWriter(out, opt.Options)
	if err != nil {
		fw.abort()
		return nil, errors.Join(err, os.Remove(tmp))
	}
	if opt.Seal != nil && fw.d != nil {
		// a chunk lent to the seal's worker (WriteChunkLent) whose
		// payloads changed is hashed from the file
		opt.Seal.SetSource(f)
		fw.Writer.readBack = true
	}
	return fw, nil
}

// Close finishes the MCAP file, syncs it and renames it into place. On
// failure the temporary file is removed and every error is reported.
func (fw *FileWriter) Close() error {
	if fw.done {
		return fmt.Errorf("mcap: %s: %w", fw.path, os.ErrClosed)
	}
	fw.done = true
	err := fw.Writer.Close()
	switch {
	case err != nil:
		fw.abort()
	case fw.sink != nil:
		if err = fw.sink.finish(); err != nil {
			fw.abort()
		} else {
			err = fw.f.Close()
		}
	default:
		if err = fw.bw.Flush(); err != nil {
			fw.abort()
		} else {
			err = fw.d.Finish() // truncate the preallocation, fsync, close
		}
	}
	if err != nil {
		return errors.Join(err, fw.remove())
	}
	if fw.inPlace {
		return nil
	}
	if err := os.Rename(fw.tmp, fw.path); err != nil {
		return errors.Join(err, os.Remove(fw.tmp))
	}
	return syncDir(filepath.Dir(fw.path))
}

// Abort stops writing and removes the temporary file (an InPlace file is
// left to the caller).
func (fw *FileWriter) Abort() error {
	if fw.done {
		return nil
	}
	fw.done = true
	fw.abort()
	return fw.remove()
}

// remove deletes the temporary file; an in-place file is the caller's.
func (fw *FileWriter) remove() error {
	if fw.inPlace {
		return nil
	}
	return os.Remove(fw.tmp)
}

func (fw *FileWriter) abort() {
	if fw.sink != nil {
		fw.sink.abort()
	}
	if fw.d != nil {
		_ = fw.d.Abort()
		return
	}
	_ = fw.f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}
