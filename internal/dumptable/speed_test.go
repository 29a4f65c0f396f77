package dumptable

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestExportParquetSpeed gates the figure: the Parquet export of a
// demo-like dump (5 s of the demo vehicle's topics, camera included, three
// typed tables) runs at 100 MB/s of the dump's payload or more, and not
// slower than the JSON-lines export of the same dump (median of 7
// interleaved rounds). A speed gate: it runs alone in CI's bench-gates step
// (EDR_SPEED_GATES=1).
func TestExportParquetSpeed(t *testing.T) {
	if os.Getenv("EDR_SPEED_GATES") != "1" {
		t.Skip("a speed gate: runs alone in CI's bench-gates step (EDR_SPEED_GATES=1), not beside other tests on shared cores")
	}
	dir := t.TempDir()
	src, types := openDemoLike(t, dir, false)
	var pq, jl []float64
	var bytes, rows float64
	for i := range 7 {
		tp, tj, by, r := exportRound(t, src, types, filepath.Join(dir, fmt.Sprint(i)))
		pq, jl, bytes, rows = append(pq, tp), append(jl, tj), by, r
	}
	f := figures(pq, jl, bytes, rows)
	t.Logf("parquet export of a demo-like dump: %.0f MB/s of payload, %.0f rows/s; jsonl %.0f MB/s; ratio parquet/jsonl %.2f",
		f.ParquetMBs, f.RowsPerS, f.JSONLMBs, f.Ratio)
	if f.ParquetMBs < 100 || f.Ratio < 1 {
		t.Errorf("parquet %.0f MB/s (want >= 100), ratio to jsonl %.2f (want >= 1)", f.ParquetMBs, f.Ratio)
	}
}
