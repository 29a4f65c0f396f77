package shm

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/edr-lite/edr-lite/internal/testutil"
)

// validSegment makes a segment with three messages in dir and returns its
// path; the producer stays open (live) until the test ends.
func validSegment(t *testing.T, dir, name string) string {
	t.Helper()
	p := newProducer(t, dir, ProducerOptions{Name: name, Capacity: MinCapacity, MaxPayload: 1000})
	for i := range 3 {
		if err := p.Publish(int64(i), []byte("hello, recorder")); err != nil {
			t.Fatal(err)
		}
	}
	return p.Path()
}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func u16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// TestHostileSegmentsQuarantined corrupts one field of a valid segment at a
// time: each must give a SegmentError naming that field and its offset,
// never a panic and never a partial read past the corruption.
func TestHostileSegmentsQuarantined(t *testing.T) {
	rec := int64(recordSize(uint64(len("hello, recorder"))))
	ring := int64(HeaderSize)
	for _, tc := range []struct {
		name  string
		off   int64
		bytes []byte
		field string
		at    int64
		is    error
		cutTo int64 // truncate the file to this size instead (when > 0)
	}{
		{name: "magic", off: 0, bytes: []byte("NOTEDR!!"), field: "magic", at: 0, is: ErrBadMagic},
		{name: "version", off: offVersion, bytes: u32(99), field: "version", at: offVersion, is: ErrBadVersion},
		{name: "header size", off: offHeaderSize, bytes: u32(8192), field: "header_size", at: offHeaderSize},
		{name: "total size", off: offTotalSize, bytes: u64(1 << 40), field: "total_size", at: offTotalSize},
		{name: "capacity not power of two", off: offCapacity, bytes: u64(5000), field: "capacity", at: offCapacity},
		{name: "capacity huge", off: offCapacity, bytes: u64(1 << 62), field: "capacity", at: offCapacity},
		{name: "max payload beyond ring", off: offMaxPayload, bytes: u32(1 << 30), field: "max_payload", at: offMaxPayload},
		{name: "flags", off: offFlags, bytes: u32(1), field: "flags", at: offFlags},
		{name: "negative heartbeat", off: offHeartbeatPeriod, bytes: u64(1 << 63), field: "heartbeat_period_ns", at: offHeartbeatPeriod},
		{name: "name too long", off: offNameLen, bytes: u16(300), field: "name_len", at: offNameLen},
		{name: "name empty", off: offNameLen, bytes: u16(0), field: "name_len", at: offNameLen},
		{name: "name control byte", off: offName, bytes: []byte{'\n'}, field: "name", at: offName},
		{name: "name padding not zero", off: offName + 7, bytes: []byte{'x'}, field: "name", at: offName + 7},
		{name: "name impersonates another topic", off: offName, bytes: []byte("b"), field: "name", at: offName, is: ErrBadName},
		{name: "type not UTF-8", off: offTypeLen, bytes: u16(1), field: "type", at: offType},
		{name: "truncated file", cutTo: HeaderSize + 100, field: "total_size", at: offTotalSize, is: ErrTruncated},
		{name: "truncated header", cutTo: 100, field: "total_size", at: offTotalSize, is: ErrTruncated},
		{name: "write cursor unaligned", off: offWriteCursor, bytes: u64(13), field: "write_cursor", at: offWriteCursor},
		{name: "tail after write", off: offTailCursor, bytes: u64(1 << 20), field: "tail_cursor", at: offTailCursor},
		{name: "write cursor a lap ahead", off: offWriteCursor, bytes: u64(MinCapacity * 3), field: "tail_cursor", at: offTailCursor},
		{name: "record longer than max payload", off: ring, bytes: u32(5000), field: "record.length", at: ring},
		{name: "record past write cursor", off: ring + 2*rec, bytes: u32(900), field: "record.length", at: ring + 2*rec},
		{name: "record kind", off: ring + rec + 4, bytes: u32(9), field: "record.kind", at: ring + rec + 4},
		{name: "sequence backwards", off: ring + 2*rec + 8, bytes: u64(0), field: "record.seq", at: ring + 2*rec + 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := validSegment(t, dir, "a")
			if tc.name == "type not UTF-8" {
				writeAt(t, path, offType, []byte{0xff})
			}
			if tc.cutTo > 0 {
				if err := os.Truncate(path, tc.cutTo); err != nil {
					t.Fatal(err)
				}
			} else {
				writeAt(t, path, tc.off, tc.bytes)
			}
			sink := newRecSink()
			st, err := DrainFile(path, sink, ConsumerOptions{})
			var se *SegmentError
			if !errors.As(err, &se) {
				t.Fatalf("got %v (%T), want a *SegmentError", err, err)
			}
			if se.Segment != path || se.Field != tc.field || se.Offset != tc.at {
				t.Errorf("got segment %s field %s offset %d, want %s %s %d (%v)", se.Segment, se.Field, se.Offset, path, tc.field, tc.at, err)
			}
			if !errors.Is(err, ErrCorrupt) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("%v: does not wrap ErrCorrupt / %v", err, tc.is)
			}
			for _, s := range []string{path, tc.field} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
			// Records before the corruption may be ingested, never after it.
			if int64(st.Messages)*rec+ring > max(tc.at, ring) && tc.at >= ring {
				t.Errorf("%d messages ingested past the corruption at %d", st.Messages, tc.at)
			}
		})
	}
}

func TestValidSegmentDrains(t *testing.T) {
	path := validSegment(t, t.TempDir(), "a")
	sink := newRecSink()
	st, err := DrainFile(path, sink, ConsumerOptions{})
	if err != nil || st.Messages != 3 || st.Lost != 0 {
		t.Fatalf("got %+v, %v; want 3 messages", st, err)
	}
}

func TestSegmentOwnerChecked(t *testing.T) {
	testutil.SkipUnlessRoot(t, "to give a file to another user")
	dir := t.TempDir()
	path := validSegment(t, dir, "a")
	if err := os.Chown(path, 12345, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := DrainFile(path, newRecSink(), ConsumerOptions{}); !errors.Is(err, ErrOwner) {
		t.Fatalf("foreign owner: %v, want ErrOwner", err)
	}
	if _, err := DrainFile(path, newRecSink(), ConsumerOptions{AllowUIDs: []uint32{12345}}); err != nil {
		t.Fatalf("allowed owner: %v", err)
	}
}

func TestSymlinkSegmentRefused(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	target := validSegment(t, elsewhere, "a")
	link := filepath.Join(dir, filepath.Base(target))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := DrainFile(link, newRecSink(), ConsumerOptions{}); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("symlink: %v, want ELOOP", err)
	}
	fifo := filepath.Join(dir, "fifo~.seg")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := DrainFile(fifo, newRecSink(), ConsumerOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("fifo: %v, want a not-a-regular-file error", err)
	}
	if _, err := DrainFile(filepath.Join(dir, "missing~.seg"), newRecSink(), ConsumerOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

func TestSegmentFileNameIsSafe(t *testing.T) {
	f := func(name, channel, want string) {
		t.Helper()
		got := SegmentFileName(name, channel)
		if want != "" && got != want {
			t.Errorf("SegmentFileName(%q, %q) = %q, want %q", name, channel, got, want)
		}
		if strings.ContainsAny(got, "/\x00") || got[0] == '.' || len(got) > 255 || !isSegmentName(got) {
			t.Errorf("SegmentFileName(%q, %q) = %q is not a safe file name", name, channel, got)
		}
	}
	f("vehicle/speed", "", "vehicle%2Fspeed~.seg")
	f("vehicle/speed", "front", "vehicle%2Fspeed~front.seg")
	f("../../etc/passwd", "", "%2E.%2F..%2Fetc%2Fpasswd~.seg")
	f(".hidden", "x", "%2Ehidden~x.seg")
	f("a~b", "", "a%7Eb~.seg")
	f(strings.Repeat("é", 128), strings.Repeat("/", 64), "")
	long1 := SegmentFileName(strings.Repeat("x", 250)+"1", "")
	long2 := SegmentFileName(strings.Repeat("x", 250)+"2", "")
	if long1 == long2 {
		t.Errorf("long names collide: %q", long1)
	}
	// Distinct (name, channel) pairs never share a file.
	if SegmentFileName("a~b", "") == SegmentFileName("a", "b") {
		t.Error("a~b# and a#b share a file")
	}
}

// TestProducerReplacesJunkWithoutBlocking: a FIFO or a garbage file where a
// segment should be does not hang or stop a producer.
func TestProducerReplacesJunkWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, SegmentFileName("f", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, SegmentFileName("g", "")), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"f", "g"} {
		p := newProducer(t, dir, ProducerOptions{Name: name})
		if _, err := DrainFile(p.Path(), newRecSink(), ConsumerOptions{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestProducerDistrustsHugeScribbledLength: a record length of 2^31 or
// more scribbled on the producer's ring (someone else wrote into it) does
// not steer the tail: it stays a boundary of the producer's own records.
// On 32-bit such a length once turned negative as an int and wrapped the
// record size to 8 bytes, so the producer walked on through garbage and
// published a tail that was no record boundary; the producer now reads no
// record of its ring to move the tail (it remembers where each segment's
// first record starts).
func TestProducerDistrustsHugeScribbledLength(t *testing.T) {
	p := newProducer(t, t.TempDir(), ProducerOptions{Name: "s", Capacity: MinCapacity})
	payload := make([]byte, 100) // 128-byte records: 32 fill the ring
	const fill = MinCapacity / 128
	for i := range fill {
		if err := p.Publish(int64(i), payload); err != nil {
			t.Fatal(err)
		}
	}
	binary.LittleEndian.PutUint32(p.ring[0:], 0xFFFF_FFF0) // the oldest record's length
	if err := p.Publish(fill, payload); err != nil {
		t.Fatal(err)
	}
	if got := p.c.tail.Load(); got%128 != 0 || got < 128 || got > fill*128 {
		t.Fatalf("tail %d after a scribbled length at 0: not a record boundary in (0, %d]", got, fill*128)
	}
}

// TestProducerTailIsRecordBoundary: over many laps of records of random
// sizes (padding at the ring end included), the tail the producer
// publishes is always the start of one of its records (or its write
// cursor), the records from it to the write cursor walk exactly there, it
// never trails by more than the capacity, and it frees at most about two
// segments (capacity/16) more than the new record needs.
func TestProducerTailIsRecordBoundary(t *testing.T) {
	for _, capa := range []int{MinCapacity, 64 << 10} {
		p := newProducer(t, t.TempDir(), ProducerOptions{Name: "tail", Capacity: capa, MaxPayload: capa / 8})
		c := uint64(capa)
		seg := c / tailSlack
		x := uint64(capa)
		buf := make([]byte, capa/8)
		for i := range 20_000 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			n := int(x % uint64(len(buf)+1))
			if x>>60 != 0 {
				n = int(x % 200) // mostly small
			}
			if err := p.Publish(int64(i), buf[:n]); err != nil {
				t.Fatal(err)
			}
			w, tail := p.c.write.Load(), p.c.tail.Load()
			if tail > w || w-tail > c {
				t.Fatalf("capacity %d, publish %d: tail %d, write %d", capa, i, tail, w)
			}
			if w > c && w-tail < c-2*seg-recordSize(uint64(len(buf)))-seg {
				t.Fatalf("capacity %d, publish %d: tail %d keeps only %d of %d bytes", capa, i, tail, w-tail, c)
			}
			for pos := tail; pos != w; {
				off := pos & p.mask
				if pos > w {
					t.Fatalf("capacity %d, publish %d: walk from tail %d passes write %d", capa, i, tail, w)
				}
				switch binary.LittleEndian.Uint32(p.ring[off+4:]) {
				case KindPadding:
					pos += c - off
				case KindMessage:
					pos += recordSize(uint64(binary.LittleEndian.Uint32(p.ring[off:])))
				default:
					t.Fatalf("capacity %d, publish %d: tail %d is no record boundary (kind at %d)", capa, i, tail, pos)
				}
			}
		}
		if _, err := DrainFile(p.Path(), newRecSink(), ConsumerOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
