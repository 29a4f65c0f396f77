package durable

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestFileWritesInOrder: Write and Writev pieces (small and large, past
// several writeback chunks with a bound on the bytes in flight) read back
// as written, at exactly the written size (the preallocation trimmed).
func TestFileWritesInOrder(t *testing.T) {
	for _, o := range []Options{{}, {MaxInFlight: WritebackChunk}, {Async: true}, {Async: true, MaxInFlight: WritebackChunk}} {
		flight := o.MaxInFlight
		path := filepath.Join(t.TempDir(), "f")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		o.Prealloc = 1 << 20
		d := New(f, path, o)
		var want bytes.Buffer
		for i := range 40 {
			big := bytes.Repeat([]byte{byte(i)}, 700<<10+i)
			small := []byte{byte(i), 1, 2, 3}
			if i%2 == 0 {
				if _, err := d.Write(big); err != nil {
					t.Fatal(err)
				}
				want.Write(big)
				continue
			}
			pieces := [][]byte{small, nil, big, small}
			write := d.Writev
			if i%4 == 1 {
				write = d.Submit // the pieces stay unchanged until the next call
			}
			if err := write(pieces, int64(2*len(small)+len(big))); err != nil {
				t.Fatal(err)
			}
			want.Write(small)
			want.Write(big)
			want.Write(small)
		}
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
		if d.Offset() != int64(want.Len()) {
			t.Fatalf("Offset %d, wrote %d", d.Offset(), want.Len())
		}
		if err := d.Finish(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("async %v, max in flight %d: file of %d bytes differs from the %d written", o.Async, flight, len(got), want.Len())
		}
	}
}

// TestAdvance: a short writev's remainder starts at the first unwritten
// byte, empty pieces skipped.
func TestAdvance(t *testing.T) {
	f := func(n int, want string) {
		t.Helper()
		p := advance([][]byte{[]byte("ab"), nil, []byte("cde"), []byte("f")}, n)
		if got := string(bytes.Join(p, nil)); got != want {
			t.Errorf("advance %d: %q, want %q", n, got, want)
		}
	}
	f(0, "abcdef")
	f(1, "bcdef")
	f(2, "cdef")
	f(4, "ef")
	f(5, "f")
	f(6, "")
}

// TestAbortTrims: Abort keeps what was written, not the preallocation.
func TestAbortTrims(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	d := New(f, path, Options{})
	if _, err := d.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := d.Abort(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 5 {
		t.Fatalf("after Abort: %v %v, want 5 bytes", st, err)
	}
}

// TestBuffered: small and large writes through Buffered read back in order.
func TestBuffered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	d := New(f, path, Options{})
	b := NewBuffered(d)
	var want bytes.Buffer
	for i := range 300 {
		n := (i * 7919) % (3 * bufferDirect)
		if i%3 == 0 {
			n = i % 50
		}
		p := bytes.Repeat([]byte{byte(i)}, n)
		if _, err := b.Write(p); err != nil {
			t.Fatal(err)
		}
		want.Write(p)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("read back %d bytes (%v), wrote %d", len(got), err, want.Len())
	}
}

// TestFileRewind: bytes written after a Rewind replace those taken back
// (shorter and longer than them, across a writeback chunk), and Finish
// cuts the file at the last byte written, not at the furthest.
func TestFileRewind(t *testing.T) {
	for _, o := range []Options{{}, {Async: true}} {
		path := filepath.Join(t.TempDir(), "f")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		o.Prealloc = 1 << 20
		d := New(f, path, o)
		var want []byte
		for i := range 12 {
			keep := bytes.Repeat([]byte{byte(i)}, 3<<20+i)
			if err := d.Writev([][]byte{keep}, int64(len(keep))); err != nil {
				t.Fatal(err)
			}
			want = append(want, keep...)
			torn := bytes.Repeat([]byte{0xee}, (i%3)<<20+7)
			if err := d.Submit([][]byte{torn}, int64(len(torn))); err != nil {
				t.Fatal(err)
			}
			if err := d.Rewind(int64(len(want))); err != nil {
				t.Fatal(err)
			}
			if d.Offset() != int64(len(want)) {
				t.Fatalf("Offset %d after Rewind to %d", d.Offset(), len(want))
			}
		}
		if err := d.Rewind(int64(len(want)) + 1); err == nil {
			t.Fatal("Rewind past the end: no error")
		}
		if err := d.Finish(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("async %v: file of %d bytes differs from the %d kept", o.Async, len(got), len(want))
		}
	}
}

// TestBufferedWritevRewind: Buffered.Writev writes what is buffered, then
// the pieces; Rewind takes back bytes still buffered (the buffer cut) and
// bytes already written (the file rewound), and what follows is written
// over them.
func TestBufferedWritevRewind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBuffered(New(f, path, Options{Prealloc: 1 << 20}))
	var want []byte
	write := func(p []byte) {
		t.Helper()
		if _, err := b.Write(p); err != nil {
			t.Fatal(err)
		}
		want = append(want, p...)
	}
	write([]byte("head"))
	big := bytes.Repeat([]byte{7}, 100<<10)
	if err := b.Writev([][]byte{[]byte("ab"), big, []byte("cd")}, int64(4+len(big))); err != nil {
		t.Fatal(err)
	}
	want = append(append(append(want, "ab"...), big...), "cd"...)
	if got := b.d.Offset(); got != int64(len(want)) || len(b.buf) != 0 {
		t.Fatalf("file offset %d and %d bytes buffered after Writev, want %d and 0", got, len(b.buf), len(want))
	}
	mark := int64(len(want))
	write([]byte("buffered"))
	if err := b.Rewind(mark + 3); err != nil { // inside the buffer
		t.Fatal(err)
	}
	want = want[:mark+3]
	write([]byte("XY"))
	if err := b.Rewind(6); err != nil { // into what was written
		t.Fatal(err)
	}
	want = want[:6]
	write([]byte("tail"))
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.d.Finish(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("file %q, want %q", got, want)
	}
}

// TestBehind: what a producer writes through Behind, reusing its buffer
// at once (as an age stream does), reaches the file in order, whole,
// written by the File's writer thread; an error of that thread's write
// comes back from a later call.
func TestBehind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "behind")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	d := New(f, path, Options{Async: true})
	b := NewBehind(d)
	var want []byte
	p := make([]byte, 300<<10)
	for i := range 40 {
		q := p[:(i*37<<10)%len(p)+1]
		for j := range q {
			q[j] = byte(i*7 + j)
		}
		want = append(want, q...)
		if n, err := b.Write(q); err != nil || n != len(q) {
			t.Fatal(n, err)
		}
		clear(q) // the producer reuses it
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("file %d bytes, want %d (%v)", len(got), len(want), err)
	}

	// the writer thread's write fails (a full device)
	f2, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	d2 := New(f2, "/dev/full", Options{Async: true})
	b2 := NewBehind(d2)
	_, err = b2.Write(make([]byte, 3*BufferSize))
	if err == nil {
		err = b2.Flush()
	}
	if err == nil {
		t.Fatal("a failed write was lost")
	}
	d2.Abort()
}

// TestBehindReleased: a released Behind refuses writes (its buffers are
// another's now) and a second Release changes nothing.
func TestBehindReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "released")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	d := New(f, path, Options{Async: true})
	b := NewBehind(d)
	if _, err := b.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	b.Release()
	b.Release()
	if n, err := b.Write([]byte("y")); n != 0 || !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after Release: %d, %v", n, err)
	}
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
}
