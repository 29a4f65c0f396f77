package engine

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
)

// TestReadHeaderCopyPayload: ReadHeader consumes a message without its
// payload; CopyPayload copies that payload while the ring holds it, and
// refuses once the writer overwrote it, or twice, or after ReadInto.
func TestReadHeaderCopyPayload(t *testing.T) {
	r, vc := newTestRecorder(t, Config{TopicBytes: 64 << 10})
	id, err := r.Discover(ingest.TopicInfo{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := r.NewReader(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	payload := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1000+i) }
	for i := range 3 {
		vc.Advance(time.Millisecond)
		r.Ingest(id, int64(i+1), payload(i))
	}
	var m Message
	n, ok := rd.ReadHeader(&m)
	if !ok || n != 1000 || m.Seq != 0 || m.GenNs != 1 || m.Topic != id || m.Data != nil {
		t.Fatalf("ReadHeader = %d, %v, %+v", n, ok, m)
	}
	// the next message's header: the first one's payload is no longer offered
	if n, ok := rd.ReadHeader(&m); !ok || n != 1001 || m.Seq != 1 {
		t.Fatalf("second ReadHeader = %d, %v, %+v", n, ok, m)
	}
	buf, ok := rd.CopyPayload(nil)
	if !ok || !bytes.Equal(buf, payload(1)) {
		t.Fatalf("CopyPayload = %d bytes, %v", len(buf), ok)
	}
	if _, ok := rd.CopyPayload(buf); ok {
		t.Fatal("CopyPayload twice for one ReadHeader")
	}
	if !rd.ReadInto(&m) || m.Seq != 2 || !bytes.Equal(m.Data, payload(2)) {
		t.Fatalf("ReadInto after ReadHeader = %+v", m)
	}
	if _, ok := rd.CopyPayload(buf); ok {
		t.Fatal("CopyPayload after ReadInto")
	}
	if _, ok := rd.ReadHeader(&m); ok {
		t.Fatal("ReadHeader past the newest message")
	}

	// overwritten between ReadHeader and CopyPayload: refused, not torn
	vc.Advance(time.Millisecond)
	r.Ingest(id, 9, payload(9))
	if _, ok := rd.ReadHeader(&m); !ok || m.Seq != 3 {
		t.Fatalf("ReadHeader = %+v", m)
	}
	for i := range 200 { // 200 KB through a 64 KiB ring
		vc.Advance(time.Millisecond)
		r.Ingest(id, 0, payload(i%200))
	}
	if got, ok := rd.CopyPayload(buf); ok || len(got) != 0 {
		t.Fatalf("CopyPayload of an overwritten message = %d bytes, %v", len(got), ok)
	}
	if lost := rd.Lost(); lost != 0 {
		t.Fatalf("Lost = %d: the refused payload's header was delivered", lost)
	}
	// after a Close, nothing
	rd2, _ := r.NewReader(id)
	if _, ok := rd2.ReadHeader(&m); !ok {
		t.Fatal("ReadHeader at the oldest message")
	}
	rd2.Close()
	if _, ok := rd2.CopyPayload(nil); ok {
		t.Fatal("CopyPayload after Close")
	}
}

// TestCopyPayloadStress: a writer overwrites a small ring as fast as it
// can while a reader takes headers and copies their payloads a little
// later; every payload CopyPayload returns is intact (its bytes all carry
// its sequence number), and some are refused as overwritten.
func TestCopyPayloadStress(t *testing.T) {
	r, _ := newTestRecorder(t, Config{TopicBytes: 64 << 10})
	id, err := r.Discover(ingest.TopicInfo{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := r.NewReader(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	writes := 200_000
	if raceEnabled {
		writes = 20_000
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 3000)
		for i := range writes {
			for j := range b {
				b[j] = byte(i)
			}
			r.Ingest(id, 0, b[:1000+i%2000])
			if i%64 == 0 {
				runtime.Gosched() // on one P the reader must run too
			}
		}
	}()
	var m Message
	var buf []byte
	copied, refused := 0, 0
	for stop := false; !stop; {
		select {
		case <-done:
			stop = true
		default:
		}
		for {
			n, ok := rd.ReadHeader(&m)
			if !ok {
				break
			}
			for range (copied + refused) % 5000 { // sometimes late
				runtime.Gosched()
			}
			var got bool
			if buf, got = rd.CopyPayload(buf); !got {
				refused++
				continue
			}
			copied++
			if len(buf) != n || len(buf) != 1000+int(m.Seq%2000) {
				t.Fatalf("seq %d: %d bytes, header said %d", m.Seq, len(buf), n)
			}
			for _, c := range buf {
				if c != byte(m.Seq) {
					t.Fatalf("seq %d: torn payload returned (byte %d)", m.Seq, c)
				}
			}
		}
		runtime.Gosched()
	}
	t.Logf("copied %d, refused %d, lost %d", copied, refused, rd.Lost())
	if copied == 0 {
		t.Fatal("nothing copied")
	}
}
