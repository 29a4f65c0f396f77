package bench

import (
	"crypto/rand"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"crypto/sha256"
	"filippo.io/age"

	"github.com/edr-lite/edr-lite/internal/durable"
)

// BenchmarkEvidenceFloors measures the floors under a signed and under an
// encrypted dump's write time on this machine (issue 37: signing ≤ 1.05x
// and encryption ≤ 1.25x the plain dump; docs/evidence.md, "Cost"): 64 MiB
// of 64 KiB messages, already in memory (as in the rings), written to a
// file the way the dump writers write one (durable.File: preallocated,
// writeback every 8 MiB, one fsync at the end), without any pack or MCAP
// framing, each variant timed in the same round as the plain write, in an
// order rotating by round; medians. Variants:
//
//   - plain: the messages written straight from memory on the caller's
//     thread (writev of 1 MiB of them at a time), as the plain dump does;
//   - sha256: the SHA-256 of the messages alone, no file: the one stream
//     every signed dump's digest is (sha256sum checks it, docs/evidence.md);
//   - signed: plain, with each MiB hashed on a goroutine of its own while
//     the caller writes the next (queued two deep): the signed dump's
//     pipeline with nothing else in it;
//   - age: an age stream (filippo.io/age, one X25519 recipient) over the
//     messages alone, no file;
//   - encrypted: the age stream fed on the caller's thread, its
//     ciphertext written by the file's writer thread (durable.Behind): the
//     encrypted dump's shape;
//   - encrypted-copy: the same, each message first copied and its CRC-32C
//     computed on the caller's thread (the ring copy and the frame's CRC
//     an encrypted dump's dumper does before age);
//   - encrypted-3: three threads: the caller copies and CRCs the messages
//     into 1 MiB buffers, a goroutine runs the age stream over them, the
//     file's writer thread writes the ciphertext;
//   - encrypted-split: two threads: the caller copies and CRCs into
//     1 MiB buffers for a goroutine running the age stream and writes the
//     ciphertext it collects (write(2) on the caller's thread).
//
// VARIANT/plain is the median ratio, VARIANT-ms the median time of one
// 64 MiB pass, VARIANT-cpus its CPU time over its wall time,
// VARIANT-fsync-ms the time in the file's Finish (the fsync of what
// writeback had not written). It is a measurement, not a gate.
//
//	go test -run '^$' -bench EvidenceFloors -benchtime 15x ./bench/
func BenchmarkEvidenceFloors(b *testing.B) {
	const msg, total = 64 << 10, 64 << 20
	src := make([]byte, total)
	if _, err := rand.Read(src); err != nil {
		b.Fatal(err)
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		b.Fatal(err)
	}
	to := id.Recipient()
	dir := b.TempDir()
	variants := []struct {
		name string
		run  func(path string) error
	}{
		{"plain", func(path string) error { return floorPlain(path, src, msg, false) }},
		{"sha256", func(path string) error { return floorSHA256(path, src) }},
		{"signed", func(path string) error { return floorPlain(path, src, msg, true) }},
		{"age", func(path string) error { return floorAgeNoFile(path, src, msg, to) }},
		{"encrypted", func(path string) error { return floorAge(path, src, msg, to, false) }},
		{"encrypted-copy", func(path string) error { return floorAge(path, src, msg, to, true) }},
		{"encrypted-3", func(path string) error { return floorAgeThread(path, src, msg, to) }},
		{"encrypted-split", func(path string) error { return floorAgeSplit(path, src, msg, to) }},
	}
	for _, v := range variants { // warm up, and leave a file of each to replace
		if err := v.run(filepath.Join(dir, v.name)); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(total)
	ratios := make([][]float64, len(variants))
	ms := make([][]float64, len(variants))
	cpus := make([][]float64, len(variants))
	tails := make([][]float64, len(variants))
	round := 0
	for b.Loop() {
		took := make([]time.Duration, len(variants))
		for k := range variants {
			i := (k + round) % len(variants)
			path := filepath.Join(dir, variants[i].name)
			if err := os.Remove(path); err != nil {
				b.Fatal(err)
			}
			syncDirOf(b, path)
			c0 := processCPU(b)
			t0 := time.Now()
			if err := variants[i].run(path); err != nil {
				b.Fatal(err)
			}
			took[i] = time.Since(t0)
			tails[i] = append(tails[i], floorTail.Seconds()*1e3)
			cpus[i] = append(cpus[i], (processCPU(b)-c0).Seconds()/took[i].Seconds())
		}
		for i := range variants {
			ratios[i] = append(ratios[i], took[i].Seconds()/took[0].Seconds())
			ms[i] = append(ms[i], took[i].Seconds()*1e3)
		}
		round++
	}
	for i, v := range variants {
		if i > 0 {
			b.ReportMetric(median(ratios[i]), v.name+"/plain")
		}
		b.ReportMetric(median(ms[i]), v.name+"-ms")
		b.ReportMetric(median(cpus[i]), v.name+"-cpus")
		b.ReportMetric(median(tails[i]), v.name+"-fsync-ms")
	}
}

// floorFile is a new file at path written as a dump's file is.
func floorFile(path string, size int64, async bool) (*durable.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return durable.New(f, path, durable.Options{Prealloc: size, Async: async}), nil
}

func floorPlain(path string, src []byte, msg int, hashed bool) error {
	d, err := floorFile(path, int64(len(src)), false)
	if err != nil {
		return err
	}
	var todo chan []byte
	var sum chan [sha256.Size]byte
	if hashed {
		todo, sum = make(chan []byte, 2), make(chan [sha256.Size]byte)
		go func() {
			h := sha256.New()
			for p := range todo {
				h.Write(p)
			}
			sum <- [sha256.Size]byte(h.Sum(nil))
		}()
	}
	iov := make([][]byte, 0, durable.BufferSize/msg)
	for off := 0; off < len(src); off += durable.BufferSize {
		iov = iov[:0]
		for o := off; o < off+durable.BufferSize; o += msg {
			iov = append(iov, src[o:o+msg])
		}
		if err := d.Submit(iov, durable.BufferSize); err != nil {
			d.Abort()
			return err
		}
		if hashed {
			todo <- src[off : off+durable.BufferSize]
		}
	}
	if hashed {
		close(todo)
		<-sum // the seal is written before the fsync
	}
	return floorFinish(d)
}

// floorSHA256 is the SHA-256 of src alone (an empty file is still made, so
// that every variant has one to replace).
func floorSHA256(path string, src []byte) error {
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return err
	}
	sha256.Sum256(src)
	floorTail = 0
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// floorAgeFile is an age stream into a new file at path written by the
// File's writer thread (durable.Behind), as an encrypted dump's is.
func floorAgeFile(path string, size int, to age.Recipient) (*durable.File, *durable.Behind, io.WriteCloser, error) {
	d, err := floorFile(path, int64(size)+int64(size)/(64<<10)*16+4096, true)
	if err != nil {
		return nil, nil, nil, err
	}
	bh := durable.NewBehind(d)
	w, err := age.Encrypt(bh, to)
	if err != nil {
		d.Abort()
		bh.Release()
		return nil, nil, nil, err
	}
	return d, bh, w, nil
}

// floorAgeClose ends the age stream and finishes its file.
func floorAgeClose(d *durable.File, bh *durable.Behind, w io.WriteCloser) error {
	if err := w.Close(); err != nil {
		d.Abort()
		return err
	}
	if err := bh.Flush(); err != nil {
		d.Abort()
		return err
	}
	return floorFinish(d)
}

func floorAge(path string, src []byte, msg int, to age.Recipient, copyFirst bool) error {
	d, bh, w, err := floorAgeFile(path, len(src), to)
	if err != nil {
		return err
	}
	defer bh.Release()
	scratch := make([]byte, msg)
	var crc uint32
	for off := 0; off < len(src); off += msg {
		p := src[off : off+msg]
		if copyFirst {
			copy(scratch, p)
			crc = crc32.Update(crc, castagnoli, scratch)
			p = scratch
		}
		if _, err := w.Write(p); err != nil {
			d.Abort()
			return err
		}
	}
	runtime.KeepAlive(crc)
	return floorAgeClose(d, bh, w)
}

// collector gathers an age stream's ciphertext into 1 MiB buffers and
// sends each full one on out (buffers cycle through free).
type collector struct {
	buf       []byte
	free, out chan []byte
}

func (c *collector) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if c.buf == nil {
			c.buf = (<-c.free)[:0]
		}
		k := copy(c.buf[len(c.buf):cap(c.buf)], p)
		c.buf, p = c.buf[:len(c.buf)+k], p[k:]
		if len(c.buf) == cap(c.buf) {
			c.out <- c.buf
			c.buf = nil
		}
	}
	return n, nil
}

// floorAgeSplit is two threads: the caller copies and CRCs the messages
// into 1 MiB buffers for a goroutine running the age stream, and writes
// the ciphertext it collects (write(2) on the caller's thread).
func floorAgeSplit(path string, src []byte, msg int, to age.Recipient) error {
	d, err := floorFile(path, int64(len(src))+int64(len(src))/(64<<10)*16+4096, false)
	if err != nil {
		return err
	}
	pfree, pfull := make(chan []byte, 3), make(chan []byte, 3)
	for range 3 {
		pfree <- make([]byte, durable.BufferSize)
	}
	c := &collector{free: make(chan []byte, 3), out: make(chan []byte, 3)}
	for range 3 {
		c.free <- make([]byte, durable.BufferSize)
	}
	done := make(chan error, 1)
	go func() {
		w, err := age.Encrypt(c, to)
		for buf := range pfull {
			if err == nil {
				_, err = w.Write(buf)
			}
			pfree <- buf
		}
		if err == nil {
			err = w.Close()
		}
		if c.buf != nil {
			c.out <- c.buf
		}
		close(c.out)
		done <- err
	}()
	var crc uint32
	var iov [1][]byte
	write := func(buf []byte) error {
		iov[0] = buf
		err := d.Submit(iov[:], int64(len(buf)))
		c.free <- buf[:cap(buf)]
		return err
	}
	var werr error
	for off := 0; off < len(src); {
		// fill a buffer when one is free, else write what is ready
		select {
		case buf := <-pfree:
			buf = buf[:durable.BufferSize]
			for o := 0; o < durable.BufferSize; o += msg {
				copy(buf[o:o+msg], src[off+o:off+o+msg])
				crc = crc32.Update(crc, castagnoli, buf[o:o+msg])
			}
			pfull <- buf
			off += durable.BufferSize
		case buf := <-c.out:
			if werr == nil {
				werr = write(buf)
			}
		}
	}
	close(pfull)
	for buf := range c.out {
		if werr == nil {
			werr = write(buf)
		}
	}
	runtime.KeepAlive(crc)
	if err := <-done; err != nil || werr != nil {
		d.Abort()
		return errors.Join(err, werr)
	}
	return floorFinish(d)
}

// floorAgeNoFile is the age stream alone: the ciphertext is dropped (an
// empty file is still made, so that every variant has one to replace).
func floorAgeNoFile(path string, src []byte, msg int, to age.Recipient) error {
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return err
	}
	w, err := age.Encrypt(io.Discard, to)
	if err != nil {
		return err
	}
	for off := 0; off < len(src); off += msg {
		if _, err := w.Write(src[off : off+msg]); err != nil {
			return err
		}
	}
	floorTail = 0
	return w.Close()
}

// floorFill copies src's messages into 1 MiB buffers, computing their
// CRC-32C, and sends each full buffer on out (buffers cycle through free).
func floorFill(src []byte, msg int, free <-chan []byte, out chan<- []byte) {
	var crc uint32
	for off := 0; off < len(src); off += durable.BufferSize {
		buf := (<-free)[:durable.BufferSize]
		for o := 0; o < durable.BufferSize; o += msg {
			copy(buf[o:o+msg], src[off+o:off+o+msg])
			crc = crc32.Update(crc, castagnoli, buf[o:o+msg])
		}
		out <- buf
	}
	runtime.KeepAlive(crc)
	close(out)
}

func floorAgeThread(path string, src []byte, msg int, to age.Recipient) error {
	d, bh, w, err := floorAgeFile(path, len(src), to)
	if err != nil {
		return err
	}
	defer bh.Release()
	free, full := make(chan []byte, 3), make(chan []byte, 2)
	for range 3 {
		free <- make([]byte, durable.BufferSize)
	}
	done := make(chan error, 1)
	go func() {
		var werr error
		for buf := range full {
			if werr == nil {
				_, werr = w.Write(buf)
			}
			free <- buf
		}
		done <- werr
	}()
	floorFill(src, msg, free, full)
	if err := <-done; err != nil {
		d.Abort()
		return err
	}
	return floorAgeClose(d, bh, w)
}

// floorTail is the time the last floor variant spent in its File's Finish:
// the fsync of what writeback had not yet written.
var floorTail time.Duration

func floorFinish(d *durable.File) error {
	t0 := time.Now()
	err := d.Finish()
	floorTail = time.Since(t0)
	return err
}
