package mcap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// TestReserveSameBytes: a PackWriter fed through Reserve (the payload
// written in place, then Add) writes the bytes of one fed by Add alone:
// topics appearing mid-file (a new channel appended where the payload was
// reserved), packed structs transcoded to json and one that does not
// transcode (a raw channel), meta beside data, chunks closing, and a
// reservation not used before the next.
func TestReserveSameBytes(t *testing.T) {
	type msg struct {
		name string
		meta []byte
		data []byte
	}
	var msgs []msg
	for i := range 2000 {
		m := msg{name: fmt.Sprint("t", i%5), data: bytes.Repeat([]byte{byte(i)}, (i*53)%5000+1)}
		if i%5 == 3 { // speed: f32le, u8, pad 3
			m.name, m.data = "speed", make([]byte, 8)
			binary.LittleEndian.PutUint32(m.data, uint32(i))
			if i%25 == 3 {
				m.data = m.data[:5] // too short: written raw
			}
		}
		if i%7 == 0 {
			m.meta = []byte("meta")
		}
		if i > 0 && i%400 == 0 {
			m.name = fmt.Sprint("late", i) // a new topic mid-file
		}
		msgs = append(msgs, m)
	}
	write := func(reserve bool) []byte {
		var buf bytes.Buffer
		pw, err := NewPackWriter(&buf, Options{ChunkSize: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if err := pw.DeclareTopic(Topic{Name: "speed", Type: typSpeedA}); err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			data := m.data
			if reserve {
				if i%11 == 0 {
					pw.Reserve(100) // not used: the next reservation takes its place
				}
				data = pw.Reserve(len(m.data))
				copy(data, m.data)
			}
			if err := pw.Add(m.name, "", m.meta, int64(i)+1e18, int64(i)+1e18, data); err != nil {
				t.Fatal(err)
			}
		}
		if err := pw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	want, got := write(false), write(true)
	if !bytes.Equal(got, want) {
		t.Fatalf("through Reserve: %d bytes differ from Add's %d", len(got), len(want))
	}
	if _, err := NewReader(got, "t", ReaderOptions{}); err != nil {
		t.Fatal(err)
	}
}
