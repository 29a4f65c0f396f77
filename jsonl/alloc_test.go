//go:build !race

package jsonl

import (
	"bytes"
	"testing"
)

// TestLineAllocs: encoding a message line allocates nothing once the
// buffer has grown.
func TestLineAllocs(t *testing.T) {
	buf := make([]byte, 0, 4096)
	q := []byte(`"vehicle/speed"`)
	m := &Message{Meta: []byte{1, 2, 3}, Data: bytes.Repeat([]byte{0xa5, 0x5a, 7}, 100), TimeNs: 1e18, GenNs: 1e18 - 5,
		HasSeq: true, Seq: 77}
	a := testing.AllocsPerRun(100, func() {
		buf = appendMessage(buf[:0], 12345, q, m, noTypeID)
	})
	if a != 0 {
		t.Errorf("appendMessage: %v allocs", a)
	}
}
