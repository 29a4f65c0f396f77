package durable

import (
	"os"
	"sync"
)

// Behind is a buffered writer over a File with Options.Async for a
// producer that reuses its memory as soon as Write returns (an age
// stream's ciphertext chunks): Write copies into one of two buffers of
// BufferSize, and a full buffer goes to the File's writer thread while
// the other fills, so the producer (encrypting the next chunks) and the
// kernel's copy run on two threads. At most two buffers: Submit waits for
// the write before. The buffers come from those of the Behinds released
// before (Release), so a recorder writing encrypted dumps one after
// another does not allocate them for each.
type Behind struct {
	d    *File
	buf  []byte
	next []byte
	iov  [2][1][]byte
	k    int
	bufs [2]*[BufferSize]byte
}

// behindBufs keeps the buffers of released Behinds.
var behindBufs sync.Pool

func getBehindBuf() *[BufferSize]byte {
	if b, ok := behindBufs.Get().(*[BufferSize]byte); ok {
		return b
	}
	return new([BufferSize]byte)
}

// NewBehind returns a Behind writing to d (made with Options.Async; else
// each buffer is written before Write returns).
func NewBehind(d *File) *Behind {
	b := &Behind{d: d, bufs: [2]*[BufferSize]byte{getBehindBuf(), getBehindBuf()}}
	b.buf, b.next = b.bufs[0][:0:BufferSize], b.bufs[1][:0:BufferSize]
	return b
}

// Release gives the buffers back for the next Behind. Only once no write
// of the File's can still read them: after Flush, or after the File's
// Finish or Abort; the Behind is not used after it.
func (b *Behind) Release() {
	for i, p := range b.bufs {
		if p != nil {
			behindBufs.Put(p)
			b.bufs[i] = nil
		}
	}
	b.buf, b.next = nil, nil
}

// Write copies p into the buffer, handing full buffers to the writer
// thread. An asynchronous write's error is returned by a later call.
func (b *Behind) Write(p []byte) (int, error) {
	if b.bufs[0] == nil {
		return 0, os.ErrClosed // released
	}
	n := len(p)
	for len(p) > 0 {
		c := copy(b.buf[len(b.buf):cap(b.buf)], p)
		b.buf, p = b.buf[:len(b.buf)+c], p[c:]
		if len(b.buf) == cap(b.buf) {
			if err := b.submit(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// submit hands the buffer to the File (which waits for the write before)
// and continues in the other.
func (b *Behind) submit() error {
	if len(b.buf) == 0 {
		return nil
	}
	b.k ^= 1
	iov := b.iov[b.k][:]
	iov[0] = b.buf
	err := b.d.Submit(iov, int64(len(b.buf)))
	b.buf, b.next = b.next[:0], b.buf
	return err
}

// Flush hands what is buffered to the File and waits until it is written.
func (b *Behind) Flush() error {
	if err := b.submit(); err != nil {
		return err
	}
	return b.d.wait()
}
