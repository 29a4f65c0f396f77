package checkpayload

import (
	"errors"
	"testing"
)

func TestRoundTripAndCorruption(t *testing.T) {
	buf := make([]byte, MaxLen)
	for seq := range uint64(1000) {
		p := Fill(buf, seq)
		got, err := Verify(p)
		if err != nil || got != seq {
			t.Fatalf("seq %d: Verify = %d, %v", seq, got, err)
		}
		p[len(p)/2] ^= 1
		if _, err := Verify(p); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("seq %d: flipped bit not detected: %v", seq, err)
		}
	}
	if _, err := Verify(make([]byte, 5)); !errors.Is(err, ErrCorrupt) {
		t.Fatal("short payload accepted")
	}
}
