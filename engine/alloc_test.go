//go:build !race

package engine

import (
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

func TestIngestAllocs(t *testing.T) {
	r, _ := newTestRecorder(t, Config{Topics: []TopicOverride{{Match: "big/*", MaxPacket: 1024}}})
	id, err := r.Discover(ingest.TopicInfo{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	mp, err := r.Discover(ingest.TopicInfo{Name: "b", MultiProducer: true})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 100)
	if n := testing.AllocsPerRun(1000, func() { r.Ingest(id, 1, p) }); n != 0 {
		t.Errorf("Ingest: %v allocs/op, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { r.IngestAt(mp, 5, 1, p) }); n != 0 {
		t.Errorf("IngestAt (multi-producer): %v allocs/op, want 0", n)
	}
	// Drops are logged with their time for per-window accounting, also
	// without allocating: oversize (over the 1 KiB MaxPacket of "big/*").
	big, err := r.Discover(ingest.TopicInfo{Name: "big/x"})
	if err != nil {
		t.Fatal(err)
	}
	huge := make([]byte, 2048)
	ns := int64(0)
	if n := testing.AllocsPerRun(1000, func() { ns++; r.IngestAt(big, ns, 1, huge) }); n != 0 {
		t.Errorf("IngestAt (oversize drop): %v allocs/op, want 0", n)
	}
	if r.Topics()[big].Counters.RejectedOversize == 0 {
		t.Fatal("no oversize drop counted")
	}
	// ... and skipped while a dump is written (BusySkipData).
	r.busySkip = true
	r.SetBusy(true)
	if n := testing.AllocsPerRun(1000, func() { ns++; r.IngestAt(id, ns, 1, p) }); n != 0 {
		t.Errorf("IngestAt (busy skip): %v allocs/op, want 0", n)
	}
	r.SetBusy(false)
	r.busySkip = false
	if r.Topics()[id].Counters.SkippedBusy == 0 {
		t.Fatal("no busy skip counted")
	}
	// The reservation path (ingest.DirectSink): reserve, fill, commit or
	// abort, without allocating.
	if n := testing.AllocsPerRun(1000, func() {
		ns++
		if dst, ok := r.ReserveAt(id, ns, 1, len(p)); ok {
			copy(dst, p)
			r.Commit(id)
		}
		if dst, ok := r.ReserveAt(id, ns, 1, len(p)); ok {
			copy(dst, p)
			r.Abort(id)
		}
	}); n != 0 {
		t.Errorf("ReserveAt/Commit/Abort: %v allocs/op, want 0", n)
	}
	// The batch path (ingest.BatchSink): stage a run, commit or abort it.
	src := make([]byte, 8*len(p))
	msgs := make([]ingest.BatchMessage, 8)
	for i := range msgs {
		msgs[i] = ingest.BatchMessage{GenNs: 1, Off: uint32(i * len(p)), Len: uint32(len(p))}
	}
	if n := testing.AllocsPerRun(1000, func() {
		ns++
		if r.StageBatch(id, ns, src, msgs) > 0 {
			r.CommitBatch(id)
		}
		if r.StageBatch(id, ns, src, msgs) > 0 {
			r.AbortBatch(id)
		}
	}); n != 0 {
		t.Errorf("StageBatch/CommitBatch/AbortBatch: %v allocs/op, want 0", n)
	}
	rd, err := r.NewReader(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	m := Message{Data: make([]byte, 0, 256)}
	if n := testing.AllocsPerRun(1000, func() {
		r.Ingest(id, 1, p)
		rd.ReadInto(&m)
	}); n != 0 {
		t.Errorf("ReadInto: %v allocs/op, want 0", n)
	}
}
