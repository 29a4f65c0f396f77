package dump

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
)

// TestDumpWriters: the three pack writers produce the same messages and
// accounting for the same window, and each gives back the space it
// preallocated from the (upper-bound) size estimate.
func TestDumpWriters(t *testing.T) {
	var first []string
	for _, w := range []struct {
		name string
		nw   NewWriterFunc
	}{{"write", NewPackWriteWriter}, {"stream", NewPackStreamWriter}, {"mmap", NewPackMmapWriter}} {
		r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(10 * time.Millisecond), Guard: new(time.Duration(0))}, Dump: Config{NewWriter: w.nw, FrameSize: 4 << 10}})
		ids := discover(t, r, "a", "b")
		feed(r, vc, ids, t0, t0+2000*ms, ms)
		id, err := r.Trigger(TriggerParams{Reason: w.name})
		if err != nil {
			t.Fatal(err)
		}
		vc.Set(t0 + 2100*ms)
		res := wait(t, r, id)
		if res.Err != nil {
			t.Fatalf("%s: %v", w.name, res.Err)
		}
		got, info := readDump(t, res.Path)
		if len(got) != 2*1001 || len(info.Topics) != 2 || info.Topics[0].Messages != 1001 {
			t.Fatalf("%s: %d messages, accounts %+v; want 2 x 1001", w.name, len(got), info.Topics)
		}
		d := datas(got)
		if first == nil {
			first = d
		} else if strings.Join(d, " ") != strings.Join(first, " ") {
			t.Fatalf("%s: messages differ from the write writer's", w.name)
		}
		st, err := os.Stat(res.Path)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		if alloc := sys.Blocks * 512; alloc > st.Size()+64<<10 {
			t.Fatalf("%s writer: %d bytes allocated for a %d-byte dump: preallocation not trimmed", w.name, alloc, st.Size())
		}
	}
}

// TestDumpWritersLargeFrames: frames of large messages, which the write(2)
// path hands to the kernel as one writev straight from the scratch
// (pack's writeVec), read back as ingested with every variant of it:
// the default, a writer thread (Async: the scratch of the frame in flight
// is not reused until it is written), and a bound on the bytes in flight.
func TestDumpWritersLargeFrames(t *testing.T) {
	for _, w := range []struct {
		name string
		nw   NewWriterFunc
	}{
		{"write", NewPackWriteWriter},
		{"write-async", NewPackWriteWriterTuned(PackWriteTuning{Async: true})},
		{"write-inflight", NewPackWriteWriterTuned(PackWriteTuning{MaxInFlight: 1 << 20})},
		{"stream", NewPackStreamWriter},
	} {
		r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(time.Second), Post: new(10 * time.Millisecond), Guard: new(time.Duration(0)),
			CacheSize: 64 << 20, TopicBytes: 32 << 20}, Dump: Config{NewWriter: w.nw, FrameSize: 256 << 10}})
		ids := discover(t, r, "cam", "imu")
		var want []string
		for i := range 400 {
			ns := t0 + int64(i)*ms
			vc.Set(ns)
			p := make([]byte, 20<<10+i)
			for j := range p {
				p[j] = byte(i + j/64)
			}
			r.Ingest(ids["cam"], ns-1, p)
			want = append(want, string(p))
			if i%3 == 0 {
				small := fmt.Sprintf("imu@%d", i)
				r.Ingest(ids["imu"], ns-1, []byte(small))
				want = append(want, small)
			}
		}
		id, err := r.Trigger(TriggerParams{Reason: w.name})
		if err != nil {
			t.Fatal(err)
		}
		vc.Set(t0 + 500*ms)
		res := wait(t, r, id)
		if res.Err != nil {
			t.Fatalf("%s: %v", w.name, res.Err)
		}
		got, _ := readDump(t, res.Path)
		if g := datas(got); strings.Join(g, "|") != strings.Join(want, "|") {
			t.Fatalf("%s: %d messages read back differ from the %d ingested", w.name, len(g), len(want))
		}
	}
}
