//go:build !ecu

package upload

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/internal/s3test"
)

// TestMissingBucketSendsNothing (issue 32.5): a HEAD's 404 for a bucket
// that does not exist is no "object not there yet": the bucket is asked
// (HeadBucket), the error is ErrNoBucket before a byte of the dump is
// sent, and the whole queue pauses with that reason, trying only its
// oldest dump. Once the bucket exists, everything goes.
func TestMissingBucketSendsNothing(t *testing.T) {
	srv := s3test.Start(t)
	dir := t.TempDir()
	o := testOptions(srv, "fleet")
	o.Dir = dir
	u := newTestUploader(t, o)
	u.Enqueue(randomFile(t, dir, dumpName(0), 700_000))       // one PUT
	u.Enqueue(randomFile(t, dir, dumpName(1), MinPartSize+1)) // multipart
	waitUntil(t, "three attempts", func() bool {
		st := u.Status()
		return len(st.Entries) == 2 && st.Entries[0].Attempts >= 3
	})
	st := u.Status()
	if st.SentBytes != 0 {
		t.Errorf("%d bytes sent to a bucket that does not exist", st.SentBytes)
	}
	if st.LastErrorKind != KindBucket || !strings.Contains(st.LastError, "bucket does not exist") || st.Entries[0].ErrorKind != KindBucket {
		t.Errorf("error: %q (kind %q)", st.LastError, st.LastErrorKind)
	}
	if st.Entries[1].Attempts != 0 {
		t.Errorf("the second dump was tried %d times while the queue was paused for the bucket", st.Entries[1].Attempts)
	}
	waitUntil(t, "the queue paused", func() bool { st = u.Status(); return st.State == "paused" })
	if st.Paused != "bucket does not exist" || st.RetryInS <= 0 {
		t.Errorf("paused: %q, retry in %v", st.Paused, st.RetryInS)
	}
	srv.CreateBucket("fleet")
	waitUntil(t, "both uploaded", func() bool { return u.Status().Uploaded == 2 })
	if st := u.Status(); st.Paused != "" || st.SentBytes < 700_000+MinPartSize+1 {
		t.Errorf("after the bucket came: %+v", st)
	}
}

// TestTLSErrorPausesTheQueue (issue 32.6): a certificate the client does
// not trust is a server-wide error of kind tls: the whole queue pauses
// (only its oldest dump is tried, on the queue's back-off) and no file is
// read for its checksums while the server cannot be reached.
func TestTLSErrorPausesTheQueue(t *testing.T) {
	srv := s3test.StartTLS(t)
	srv.CreateBucket("fleet")
	dir := t.TempDir()
	o := testOptions(srv, "fleet")
	o.Dir, o.RetryMin, o.RetryMax = dir, 20*time.Millisecond, 100*time.Millisecond
	u := newTestUploader(t, o)
	for i := range 5 {
		u.Enqueue(randomFile(t, dir, dumpName(i), 10_000))
	}
	waitUntil(t, "five attempts", func() bool {
		st := u.Status()
		return len(st.Entries) == 5 && st.Entries[0].Attempts >= 5
	})
	st := u.Status()
	for i, e := range st.Entries[1:] {
		if e.Attempts != 0 {
			t.Errorf("dump %d tried %d times while the queue was paused", i+1, e.Attempts)
		}
	}
	if st.LastErrorKind != KindTLS || !strings.Contains(st.LastError, "TLS handshake with the server failed") ||
		!strings.Contains(st.LastError, "unknown authority") {
		t.Errorf("error %q (kind %q)", st.LastError, st.LastErrorKind)
	}
	if n := u.c.summed.Load(); n != 0 {
		t.Errorf("%d files read for their checksums while the server could not be reached", n)
	}
}

// TestSentBytesOnlyGrow (issue 32.7): a part that stalls (the server
// paused) is cut and sent again; the bytes sent, a counter, never go
// down; the bytes confirmed are the file's.
// The file is read for its checksums once for the whole upload, not once
// per attempt (issue 32.6).
func TestSentBytesOnlyGrow(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	dir := t.TempDir()
	o := testOptions(srv, "fleet")
	o.Dir, o.Bandwidth, o.Stall = dir, 8<<20, 700*time.Millisecond
	u, err := New(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	const size = 3*MinPartSize + 1000
	p := randomFile(t, dir, dumpName(0), size)
	var fell atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var last uint64
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if s := u.Status().SentBytes; s < last {
				fell.Store([2]uint64{last, s})
			} else {
				last = s
			}
		}
	}()
	if err := u.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Stop)
	u.Enqueue(p)
	waitUntil(t, "the second part under way", func() bool { return u.Status().SentBytes > MinPartSize+MinPartSize/2 })
	srv.Pause()
	waitUntil(t, "the stalled part cut", func() bool { return u.Status().Failed == 1 })
	srv.Resume()
	waitUntil(t, "the upload", func() bool { return u.Status().Uploaded == 1 })
	close(stop)
	wg.Wait()
	if f := fell.Load(); f != nil {
		t.Errorf("edr_upload_sent_bytes_total went down: %v", f)
	}
	st := u.Status()
	// the bytes of the cut part count (unless the server held it whole
	// already when it paused: then the retry found it and sent nothing)
	if st.SentBytes < size || st.UploadedBytes != size {
		t.Errorf("sent %d (at least the file's %d), confirmed %d", st.SentBytes, size, st.UploadedBytes)
	}
	if n := u.c.summed.Load(); n != 1 {
		t.Errorf("the file was read for its checksums %d times, want once for the whole upload", n)
	}
	if st.LastErrorKind != KindNetwork {
		t.Errorf("the stall's kind: %q (%s)", st.LastErrorKind, st.LastError)
	}
	if _, err := os.Stat(filepath.Join(dir, dumpName(0))); err != nil || errors.Is(err, os.ErrNotExist) {
		t.Error(err)
	}
}

// TestEvictingTheDumpInFlight: rotation evicting the dump being uploaded
// (to make room for a new one) cuts its upload and returns once the file
// is closed, so its room is free; it counts as evicted, not as failed or
// missing.
func TestEvictingTheDumpInFlight(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket("fleet")
	dir := t.TempDir()
	o := testOptions(srv, "fleet")
	o.Dir, o.Bandwidth = dir, 256<<10
	u := newTestUploader(t, o)
	p := randomFile(t, dir, dumpName(0), 4<<20) // ~16 s at the cap
	u.Enqueue(p)
	waitUntil(t, "the upload under way", func() bool { return u.Status().UploadingSent > 64<<10 })
	os.Remove(p)
	start := time.Now()
	u.Evicted(dump.Eviction{Path: p, Reason: dump.ReasonMinFreeDisk, Kept: true, Why: dump.EvictReason})
	if d := time.Since(start); d > evictWait {
		t.Errorf("Evicted took %v", d)
	}
	waitUntil(t, "the upload let go", func() bool { return u.Status().Uploading == "" })
	st := u.Status()
	if st.Evicted != 1 || st.EvictedFor[dump.ReasonMinFreeDisk] != 1 || st.Queued != 0 || st.Missing != 0 || st.Uploaded != 0 || st.Failed != 0 {
		t.Errorf("status after the eviction: %+v", st)
	}
}
