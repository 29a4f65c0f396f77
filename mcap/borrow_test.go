package mcap

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// borrowMsg is a message of TestBorrowedSameBytes: its channel (or a new
// channel before it), time, and payload.
type borrowMsg struct {
	newChannel bool
	ch         uint16
	logTime    uint64
	data       []byte
}

// TestBorrowedSameBytes: a FileWriter whose large payloads are borrowed
// (WriteMessageBorrowed, chunks closed by WriteChunkProvisional and
// KeepChunk) writes the bytes of one that copies every payload
// (WriteMessage) with the chunks closed at the same messages; and when
// chunks are taken back with some borrowed payloads rejected
// (TakeBackChunk, the payload overwritten after the provisional write),
// the bytes of one that never had those messages. Channels appear
// mid-chunk, times go backwards, small payloads are copied between
// borrowed ones; mcap.Doctor finds nothing wrong with either file.
func TestBorrowedSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var msgs []borrowMsg
	chans := 1
	for i := range 1500 {
		m := borrowMsg{ch: uint16(rng.IntN(chans)), logTime: uint64(1e9 + i*1000 - rng.IntN(5000))}
		if i%97 == 5 {
			m.newChannel, m.ch = true, uint16(chans)
			chans++
		}
		n := 10 + rng.IntN(300)
		if rng.IntN(3) > 0 {
			n = 4096 + rng.IntN(20<<10)
		}
		m.data = make([]byte, n)
		for j := range m.data {
			m.data[j] = byte(rng.Uint32())
		}
		msgs = append(msgs, m)
	}
	for _, reject := range []bool{false, true} {
		name := "kept"
		if reject {
			name = "taken-back"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			dropped, flushAt := writeBorrowed(t, filepath.Join(dir, "borrowed.mcap"), msgs, reject)
			if reject && len(dropped) == 0 {
				t.Fatal("no payload rejected")
			}
			writeCopied(t, filepath.Join(dir, "copied.mcap"), msgs, dropped, flushAt)
			a := readDoctored(t, filepath.Join(dir, "borrowed.mcap"))
			b := readDoctored(t, filepath.Join(dir, "copied.mcap"))
			if !bytes.Equal(a, b) {
				t.Fatalf("borrowed file (%d bytes) differs from the copied one (%d bytes) at %d", len(a), len(b), firstDiff(a, b))
			}
			t.Logf("%d messages, %d rejected, %d chunks closed by the lender, %d bytes", len(msgs), len(dropped), len(flushAt), len(a))
		})
	}
}

func newBorrowFile(t *testing.T, path string) *FileWriter {
	t.Helper()
	fw, err := Create(path, FileOptions{Options: Options{ChunkSize: 128 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	if !fw.CanBorrow() {
		t.Fatal("a FileWriter's write(2) path without compression cannot borrow")
	}
	return fw
}

func addBorrowChannel(t *testing.T, w *Writer, ch uint16) {
	t.Helper()
	sid, err := w.AddSchema("s", "jsonschema", []byte{byte(ch)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddChannel(sid, "t", "json", map[string]string{"n": string(rune('a' + ch%26))}); err != nil {
		t.Fatal(err)
	}
}

// writeBorrowed writes msgs borrowing payloads of 4 KiB and more from
// copies it owns; when reject, every chunk with a third borrowed payload
// has that payload overwritten after the provisional write and taken back
// without it. It returns the messages left out and the messages after
// which the lender closed a chunk.
func writeBorrowed(t *testing.T, path string, msgs []borrowMsg, reject bool) (dropped, flushAt map[int]bool) {
	fw := newBorrowFile(t, path)
	w := fw.Writer
	addBorrowChannel(t, w, 0)
	dropped, flushAt = map[int]bool{}, map[int]bool{}
	var lentIdx []int // the open chunk's borrowed messages
	var lentBuf [][]byte
	for i, m := range msgs {
		if m.newChannel {
			addBorrowChannel(t, w, m.ch)
		}
		msg := Message{ChannelID: m.ch, Sequence: uint32(i), LogTime: m.logTime, PublishTime: m.logTime + 1}
		if len(m.data) >= 4096 {
			own := bytes.Clone(m.data) // the lender's memory
			msg.Data = own
			if err := w.WriteMessageBorrowed(&msg); err != nil {
				t.Fatal(err)
			}
			lentIdx, lentBuf = append(lentIdx, i), append(lentBuf, own)
		} else {
			msg.Data = m.data
			if err := w.WriteMessage(&msg); err != nil {
				t.Fatal(err)
			}
		}
		if len(lentIdx) == 0 || !w.ChunkFull() {
			continue
		}
		flushAt[i] = true
		if err := w.WriteChunkProvisional(); err != nil {
			t.Fatal(err)
		}
		if !reject || len(lentIdx) < 3 {
			w.KeepChunk()
		} else {
			lentBuf[2][0] ^= 0xFF // overwritten after the write
			err := w.TakeBackChunk(func(j int) bool {
				if j == 2 {
					dropped[lentIdx[j]] = true
					return false
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		lentIdx, lentBuf = lentIdx[:0], lentBuf[:0]
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return dropped, flushAt
}

// writeCopied writes msgs but the dropped ones with WriteMessage, closing
// a chunk (Flush) after each message of flushAt.
func writeCopied(t *testing.T, path string, msgs []borrowMsg, dropped, flushAt map[int]bool) {
	fw := newBorrowFile(t, path)
	w := fw.Writer
	addBorrowChannel(t, w, 0)
	for i, m := range msgs {
		if m.newChannel {
			addBorrowChannel(t, w, m.ch)
		}
		if !dropped[i] {
			msg := Message{ChannelID: m.ch, Sequence: uint32(i), LogTime: m.logTime, PublishTime: m.logTime + 1, Data: m.data}
			if err := w.WriteMessage(&msg); err != nil {
				t.Fatal(err)
			}
		}
		if flushAt[i] {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

func readDoctored(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if probs := Doctor(path, b, ReaderOptions{}); len(probs) > 0 {
		t.Fatalf("%s: %v", path, probs)
	}
	return b
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
