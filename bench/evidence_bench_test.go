package bench

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"golang.org/x/sys/unix"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/evidence"
)

// BenchmarkDumpSignSteps measures what signing and chaining (and
// encrypting, issue 37) add to a dump's write time: one op is one round in
// which the same recorder writes its ~64 MiB dump of 64 KiB messages with
// each variant, in an order rotating by round; it reports each variant's
// median per-round time against the plain variant of its format in the
// same round (VARIANT/plain: 1.05 = 5 % slower). Variants: write (the
// default pack writer, plain), write-signed (the same on a dumper with a
// signing key: the SHA-256 of every byte as it is written, the seal, the
// chain's ledger written before the rename, recording the dump the
// rotation then removes: a dump directory of one dump, so every dump
// rotates the one before out),
// mcap and mcap-signed, the same for MCAP dumps; write-encrypted,
// mcap-encrypted (encrypted at rest to one age recipient: the stream
// writer into an age stream, payloads copied) and write-signed-encrypted
// (both). VARIANT-cpus is the process's CPU time (getrusage: user and
// system, every thread) over the dump's wall time (1 = one CPU busy
// throughout), VARIANT-cpu/plain its CPU time over the plain variant's:
// from these, whether a ratio is bound by CPU time or by waiting.
//
// The hash of frame k runs on the seal's worker while the dumper builds
// and writes frame k+1, and the ciphertext is written by the file's
// writer thread while the dumper encrypts the next megabyte: the ratios
// reach their floor only with a core free per thread (docs/evidence.md,
// "Cost", for the floor on 2 cores and what the load did). It is a
// measurement, not a gate: no wall-time goal is checked here or in CI.
// To compare with an older tree in the same minutes, build both test
// binaries (go test -c ./bench/) and alternate them. To measure on a disk
// of an ECU's speed, run the test binary under bench/slowdisk (root).
//
//	go test -run '^$' -bench DumpSignSteps -benchtime 15x ./bench/
//	go test -c -o /tmp/bench.test ./bench/
//	sudo bench/slowdisk 400 /tmp/bench.test -test.run '^$' -test.bench DumpSignSteps -test.benchtime 15x
func BenchmarkDumpSignSteps(b *testing.B) {
	signer, err := evidence.GenerateSigner(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		b.Fatal(err)
	}
	to := []age.Recipient{id.Recipient()}
	r, d, _, _ := newDumpRecorderExt(b, dump.NewPackWriteWriter, "")
	variants := []struct {
		name  string
		plain int // the variant this one is measured against (itself: none)
		d     *dump.Dumper
	}{
		{"write", 0, d},
		{"write-signed", 0, newSignDumper(b, r, dump.Config{Signer: signer})},
		{"mcap", 2, newSignDumper(b, r, dump.Config{NewWriter: dump.NewMCAPWriter, Extension: dump.MCAPExt})},
		{"mcap-signed", 2, newSignDumper(b, r, dump.Config{NewWriter: dump.NewMCAPWriter, Extension: dump.MCAPExt, Signer: signer})},
		{"write-encrypted", 0, newSignDumper(b, r, dump.Config{NewWriter: dump.EncryptedWriter(to, false, false), Extension: dump.PackExt + ".age"})},
		{"write-signed-encrypted", 0, newSignDumper(b, r, dump.Config{NewWriter: dump.EncryptedWriter(to, false, false), Extension: dump.PackExt + ".age", Signer: signer})},
		{"mcap-encrypted", 2, newSignDumper(b, r, dump.Config{NewWriter: dump.EncryptedWriter(to, true, false), Extension: dump.MCAPExt + ".age"})},
	}
	size := dumpOnce(b, d, "big").Bytes
	for _, v := range variants[1:] {
		dumpOnce(b, v.d, "big") // warm up each, and start each signed chain
	}
	b.SetBytes(size)
	b.ReportAllocs()
	ratios := make([][]float64, len(variants))
	mbs := make([][]float64, len(variants))
	cpus := make([][]float64, len(variants))   // the process's CPU time over the dump's wall time
	cpuRel := make([][]float64, len(variants)) // CPU time over the plain variant's
	round := 0
	for b.Loop() {
		took := make([]time.Duration, len(variants))
		cpu := make([]time.Duration, len(variants))
		for k := range variants {
			i := (k + round) % len(variants)
			c0 := processCPU(b)
			t0 := time.Now()
			res := dumpOnce(b, variants[i].d, "big")
			took[i] = time.Since(t0)
			cpu[i] = processCPU(b) - c0
			if (res.Seal != nil) != strings.Contains(variants[i].name, "signed") {
				b.Fatalf("%s: seal %v", variants[i].name, res.Seal)
			}
			syncDirOf(b, res.Path) // untimed: the next step starts from the same file system state
		}
		for i, v := range variants {
			ratios[i] = append(ratios[i], took[i].Seconds()/took[v.plain].Seconds())
			mbs[i] = append(mbs[i], float64(size)/took[i].Seconds()/1e6)
			cpus[i] = append(cpus[i], cpu[i].Seconds()/took[i].Seconds())
			cpuRel[i] = append(cpuRel[i], cpu[i].Seconds()/cpu[v.plain].Seconds())
		}
		round++
	}
	for i, v := range variants {
		if v.plain != i {
			b.ReportMetric(median(ratios[i]), v.name+"/plain")
			b.ReportMetric(median(cpuRel[i]), v.name+"-cpu/plain")
		}
		b.ReportMetric(median(mbs[i]), v.name+"-MB/s")
		b.ReportMetric(median(cpus[i]), v.name+"-cpus")
	}
}

// processCPU is the process's CPU time so far (user and system, all
// threads: getrusage RUSAGE_SELF).
func processCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newSignDumper is a second dumper of r's rings writing into a directory
// of its own, keeping one dump (each dump rotates the one before out), as
// cfg says otherwise.
func newSignDumper(tb testing.TB, r *engine.Recorder, cfg dump.Config) *dump.Dumper {
	tb.Helper()
	cfg.Dir, cfg.MaxFiles, cfg.Policy = tb.TempDir(), 1, dump.PolicySeparate
	d, err := dump.New(r, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := d.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(d.Stop)
	return d
}

// syncDirOf commits the journal of the file system holding path (syncfs),
// leaving the file where it is (rotation removes it at the next dump).
func syncDirOf(tb testing.TB, path string) {
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		tb.Fatal(err)
	}
	defer dir.Close()
	if err := unix.Syncfs(int(dir.Fd())); err != nil {
		tb.Fatal(err)
	}
}
