package durable

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"filippo.io/age"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// tidWriter passes writes to w, noting the thread of the last one.
type tidWriter struct {
	w   io.Writer
	tid atomic.Int64
}

func (t *tidWriter) Write(p []byte) (int, error) {
	t.tid.Store(int64(unix.Gettid()))
	return t.w.Write(p)
}

// TestFilter: an age stream run through a Filter (its header written as
// it is made, its last chunk at its Close, both straight to the file) on
// a thread of its own, the init's, not the caller's, decrypts to what the
// caller wrote in pieces of every size while reusing its memory; the
// goroutine is gone after Close.
func TestFilter(t *testing.T) {
	defer goleak.VerifyNone(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "filtered")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	d := New(f, path, Options{Prealloc: 1 << 20})
	var initTid atomic.Int64
	fl := NewFilter(d, func() { initTid.Store(int64(unix.Gettid())) })
	w, err := age.Encrypt(fl.Sink(), id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	tw := &tidWriter{w: w}
	fl.Start(tw)
	var want []byte
	p := make([]byte, 300<<10)
	for i := range 60 { // ~9 MiB: many hand-overs each way
		q := p[:(i*37<<10)%len(p)+1]
		for j := range q {
			q[j] = byte(i*7 + j)
		}
		want = append(want, q...)
		if n, err := fl.Write(q); err != nil || n != len(q) {
			t.Fatal(n, err)
		}
		clear(q) // the producer reuses it
	}
	if err := fl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fl.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
	if me, ft := int64(unix.Gettid()), tw.tid.Load(); ft == me || ft != initTid.Load() {
		t.Errorf("the filter ran on thread %d, the init on %d, the caller is %d: want the init's, not the caller's", ft, initTid.Load(), me)
	}
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	r, err := age.Decrypt(in, id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("decrypted %d bytes, want %d (%v)", len(got), len(want), err)
	}
	if n, err := fl.Write(p[:1]); err == nil {
		t.Fatalf("Write after Close: %d, nil", n)
	}
}

// failAfter fails every write after the first n bytes.
type failAfter struct{ n int }

var errFilter = errors.New("filter failed")

func (w *failAfter) Write(p []byte) (int, error) {
	if w.n < len(p) {
		return 0, errFilter
	}
	w.n -= len(p)
	return len(p), nil
}

// TestFilterErrors: a failed write of the File (a full device) comes
// back from a later Write or from Close, and so does the filter's own
// error; the goroutine stops in both cases.
func TestFilterErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	d := New(full, "/dev/full", Options{})
	fl := NewFilter(d, nil)
	fl.Start(fl.Sink()) // the identity filter
	_, err = fl.Write(make([]byte, 3*BufferSize))
	if cerr := fl.Close(); err == nil {
		err = cerr
	}
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != "/dev/full" {
		t.Fatalf("a failed write came back as %v", err)
	}
	if ferr := fl.Flush(); ferr != err {
		t.Fatalf("Flush: %v, want %v", ferr, err)
	}
	d.Abort()

	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	d = New(f, path, Options{})
	fl = NewFilter(d, nil)
	fl.Start(&failAfter{n: BufferSize})
	_, err = fl.Write(make([]byte, 3*BufferSize))
	if cerr := fl.Close(); err == nil {
		err = cerr
	}
	if !errors.Is(err, errFilter) {
		t.Fatalf("the filter's error came back as %v", err)
	}
	fl.Flush()
	d.Abort()
}
