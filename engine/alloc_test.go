//go:build !race

package engine

import "testing"

func TestIngestAllocs(t *testing.T) {
	r, _ := newTestRecorder(t, Config{})
	id, err := r.Discover(TopicInfo{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	mp, err := r.Discover(TopicInfo{Name: "b", MultiProducer: true})
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
