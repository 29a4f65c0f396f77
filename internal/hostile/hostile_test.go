package hostile

import (
	"os"
	"testing"
)

// TestWriteCorpus writes every case into $HOSTILE_DIR (a manual aid).
func TestWriteCorpus(t *testing.T) {
	dir := os.Getenv("HOSTILE_DIR")
	if dir == "" {
		t.Skip("HOSTILE_DIR not set")
	}
	for _, c := range Cases() {
		if _, err := c.Write(dir); err != nil {
			t.Fatal(err)
		}
	}
}
