//go:build !ecu

package upload

import (
	"os"
	"testing"
)

// TestUploadSpeedRatio gates the figure: the queue's upload (HEAD,
// CRC32C pass, multipart with per-part and full-object CRC32C, HEAD to
// confirm) reaches at least half the throughput of a plain PUT of the same
// bytes by the same client, to the local server, as the median of
// interleaved rounds. It is a speed gate: it runs alone in CI's
// bench-gates step (EDR_SPEED_GATES=1).
func TestUploadSpeedRatio(t *testing.T) {
	if os.Getenv("EDR_SPEED_GATES") != "1" {
		t.Skip("a speed gate: runs alone in CI's bench-gates step (EDR_SPEED_GATES=1), not beside other tests on shared cores")
	}
	c, o, p := uploadSetup(t)
	var q, plain, ratios []float64
	for round := range 7 {
		tq, tp := uploadRound(t, c, p, benchSize, o.PartSize, round)
		q, plain, ratios = append(q, tq), append(plain, tp), append(ratios, tp/tq)
	}
	r := medianOf(ratios)
	t.Logf("upload ratio queue/plain %.2f (queue %.0f MB/s, plain PUT %.0f MB/s, median of 7 interleaved rounds of 48 MiB)",
		r, benchSize/medianOf(q)/1e6, benchSize/medianOf(plain)/1e6)
	if r < 0.5 {
		t.Errorf("queue/plain = %.2f, want >= 0.5", r)
	}
}
