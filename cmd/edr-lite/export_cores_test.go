package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// TestExportCompressesOnEveryCore: MCAP export and compress compress their
// chunks on every core with every compression, lz4 included (issue 33,
// item 1), and the file is byte for byte the one a one-core run writes
// (GOMAXPROCS=1 against 4, through the binary, a dump of ~10 chunks).
func TestExportCompressesOnEveryCore(t *testing.T) {
	for _, c := range []string{mcap.CompressionLZ4, mcap.CompressionZstd} {
		if got := mcap.ExportConcurrency(c); got != runtime.GOMAXPROCS(0) {
			t.Errorf("ExportConcurrency(%s) = %d, want GOMAXPROCS %d", c, got, runtime.GOMAXPROCS(0))
		}
	}
	if got := mcap.ExportConcurrency(mcap.CompressionNone); got != 1 {
		t.Errorf("ExportConcurrency(none) = %d, want 1", got)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pack")
	w, err := pack.Create(in, pack.WriterOptions{Writer: "test", CreatedNs: t0})
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	img := make([]byte, 64<<10)
	for i := range 160 { // 10 MiB: camera frames, half noise, and a speed topic
		for k := range img {
			img[k] = byte(k)
			if k%2 == 0 {
				img[k] = byte(rnd.Uint32())
			}
		}
		ts := t0 + int64(i)*10e6
		if err := w.Add("camera/front", "", nil, ts, ts, img); err != nil {
			t.Fatal(err)
		}
		if err := w.Add("vehicle/speed", "", nil, ts, ts, []byte{byte(i), 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run := func(procs int, args ...string) []byte {
		t.Helper()
		out := filepath.Join(dir, fmt.Sprintf("out-%d-%d", procs, rnd.Uint32()))
		cmd := exec.Command(edrBinary(t), append(args, "-o", out)...)
		cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", procs))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v (GOMAXPROCS=%d): %v\n%s", args, procs, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []string{mcap.CompressionLZ4, mcap.CompressionZstd} {
		one := run(1, "export", "--format", "mcap", "--compression", c, in)
		four := run(4, "export", "--format", "mcap", "--compression", c, in)
		if !bytes.Equal(one, four) {
			t.Errorf("export --compression %s: %d bytes on one core, %d on four, not the same bytes", c, len(one), len(four))
		}
		plain := run(1, "export", "--format", "mcap", in)
		m1 := filepath.Join(dir, "plain.mcap")
		os.WriteFile(m1, plain, 0o644)
		one = run(1, "compress", "--compression", c, m1)
		four = run(4, "compress", "--compression", c, m1)
		if !bytes.Equal(one, four) {
			t.Errorf("compress --compression %s of an MCAP file: %d bytes on one core, %d on four, not the same bytes", c, len(one), len(four))
		}
	}
}
