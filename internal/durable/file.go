package durable

import (
	"errors"
	"fmt"
	"os"
)

// DefaultPrealloc is the step in which a File preallocates ahead when
// Options.Prealloc is 0.
const DefaultPrealloc = 64 << 20

// WritebackChunk is how much written data a File lets accumulate before it
// starts its writeback (sync_file_range), so that disk I/O overlaps the
// copying and the closing fsync finds little left to do.
const WritebackChunk = 8 << 20

// Options configure a File.
type Options struct {
	// Prealloc is the step in which the file is preallocated ahead of the
	// data (DefaultPrealloc when 0); near a full disk exactly what a write
	// needs.
	Prealloc int64
	// MaxInFlight bounds the written bytes whose writeback may still be
	// running: past it, a write waits for the oldest chunk's writeback
	// (sync_file_range WAIT_BEFORE | WRITE | WAIT_AFTER) before it returns.
	// 0 means no bound (the kernel's dirty limits only).
	MaxInFlight int64
}

// File writes one file front to back durably (see the package doc).
type File struct {
	f         *os.File
	fd        int
	path      string
	off       int64 // bytes written
	kicked    int64 // writeback started up to here
	waited    int64 // writeback waited for up to here
	allocated int64
	prealloc  int64
	maxFlight int64
}

// New returns a File writing f (opened for writing, empty) at path.
func New(f *os.File, path string, o Options) *File {
	if o.Prealloc <= 0 {
		o.Prealloc = DefaultPrealloc
	}
	return &File{f: f, fd: int(f.Fd()), path: path, prealloc: o.Prealloc, maxFlight: o.MaxInFlight}
}

// Offset is the number of bytes written.
func (d *File) Offset() int64 { return d.off }

// Path is the file's path, for errors.
func (d *File) Path() string { return d.path }

// Write appends p, preallocating its space first so that a full disk is
// this write's error, never a later flush's.
func (d *File) Write(p []byte) (int, error) {
	if err := d.Ensure(d.off + int64(len(p))); err != nil {
		return 0, err
	}
	n, err := d.f.Write(p)
	d.wrote(int64(n))
	return n, err
}

// Writev appends the pieces in order, preallocated first, in as few
// system calls as the kernel allows (writev); n is their total length.
func (d *File) Writev(pieces [][]byte, n int64) error {
	if err := d.Ensure(d.off + n); err != nil {
		return err
	}
	return d.writev(pieces)
}

// Sync writes back what is in flight and waits for it (fdatasync): every
// byte written so far is durable, the size aside.
func (d *File) Sync() error {
	if err := d.datasync(); err != nil {
		return &os.PathError{Op: "fdatasync", Path: d.path, Err: err}
	}
	return nil
}

// Finish makes the file durable at its written size (truncating the
// preallocation past it, fsync) and closes it.
func (d *File) Finish() error {
	err := d.f.Truncate(d.off)
	if err == nil {
		err = d.f.Sync()
	}
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("finishing %s: %w", d.path, err)
	}
	return nil
}

// Abort drops the preallocation past what was written and closes the file.
func (d *File) Abort() error {
	return errors.Join(d.f.Truncate(d.off), d.f.Close())
}

// advance drops n written bytes from the front of pieces. It reslices the
// first piece left in place (the caller's slice header is changed).
func advance(pieces [][]byte, n int) [][]byte {
	for n > 0 && len(pieces) > 0 {
		if n < len(pieces[0]) {
			pieces[0] = pieces[0][n:]
			return pieces
		}
		n -= len(pieces[0])
		pieces = pieces[1:]
	}
	for len(pieces) > 0 && len(pieces[0]) == 0 {
		pieces = pieces[1:]
	}
	return pieces
}
