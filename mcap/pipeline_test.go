package mcap

import (
	"bytes"
	"fmt"
	"testing"
)

// TestConcurrentChunksSameBytes: with chunks compressed on several
// goroutines the file is byte for byte the serial writer's, for every
// compression and chunk size: metadata between chunks, a channel added
// mid-file, log times going back inside a chunk (MessageIndex sorting) and
// many more chunks than the pipeline holds.
func TestConcurrentChunksSameBytes(t *testing.T) {
	msgs := testMessages(3000)
	for i := range msgs {
		if i%7 == 3 { // out of order inside the chunk
			msgs[i].m.LogTime -= 5_000_000
		}
	}
	write := func(opt Options) []byte {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range testTopics[:len(testTopics)-1] {
			if _, err := w.AddTopic(tp); err != nil {
				t.Fatal(err)
			}
		}
		for i := range msgs {
			if i == len(msgs)/3 {
				if _, err := w.AddTopic(testTopics[len(testTopics)-1]); err != nil {
					t.Fatal(err)
				}
			}
			if int(msgs[i].m.ChannelID) == len(testTopics)-1 && i < len(msgs)/3 {
				continue
			}
			if i%997 == 0 {
				if err := w.AddMetadata("edr.mark", map[string]string{"at": fmt.Sprint(i)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.WriteMessage(&msgs[i].m); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, comp := range compressions {
		for _, chunk := range []int{1, 4 << 10, 64 << 10} {
			serial := write(Options{Compression: comp, ChunkSize: chunk})
			for _, workers := range []int{2, 3, 8} {
				got := write(Options{Compression: comp, ChunkSize: chunk, Concurrency: workers})
				if !bytes.Equal(got, serial) {
					t.Errorf("compression=%q chunk=%d concurrency=%d: %d bytes, the serial writer's %d differ",
						comp, chunk, workers, len(got), len(serial))
				}
			}
			if _, err := NewReader(serial, "t", ReaderOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
