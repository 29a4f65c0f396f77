package durable

// Behind is a buffered writer over a File with Options.Async for a
// producer that reuses its memory as soon as Write returns (an age
// stream's ciphertext chunks): Write copies into one of two buffers of
// BufferSize, and a full buffer goes to the File's writer thread while
// the other fills, so the producer (encrypting the next chunks) and the
// kernel's copy run on two threads. At most two buffers: Submit waits for
// the write before.
type Behind struct {
	d    *File
	buf  []byte
	next []byte
	iov  [2][1][]byte
	k    int
}

// NewBehind returns a Behind writing to d (made with Options.Async; else
// each buffer is written before Write returns).
func NewBehind(d *File) *Behind {
	return &Behind{d: d, buf: make([]byte, 0, BufferSize), next: make([]byte, 0, BufferSize)}
}

// Write copies p into the buffer, handing full buffers to the writer
// thread. An asynchronous write's error is returned by a later call.
func (b *Behind) Write(p []byte) (int, error) {
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
