package report

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/demodump"
)

// BenchmarkReportLarge measures the acceptance case of docs/report.md:
// 10 minutes × 50 topics × 1 kHz (30 M messages, every topic a packed
// struct of two plotted fields, a 1.6 GB pack dump written in the setup)
// rendered to HTML by the built binary, as a user runs it, against the
// same run's baseline: "edr-lite verify" of the same file (a full read
// with every CRC checked), rounds interleaved. It reports medians: wall
// seconds and CPU seconds (user + system) of each, their ratio, the
// report's peak RSS and the page's size.
//
//	go test -run '^$' -bench ReportLarge -benchtime 3x -timeout 30m ./report/
//
// EDR_REPORT_BENCH_MINUTES shortens the dump (default 10).
func BenchmarkReportLarge(b *testing.B) {
	if testing.Short() {
		b.Skip("writes a 1.6 GB dump")
	}
	minutes := 10
	if s := os.Getenv("EDR_REPORT_BENCH_MINUTES"); s != "" {
		fmt.Sscan(s, &minutes)
	}
	dir := b.TempDir()
	dump := filepath.Join(dir, "large.pack")
	if err := demodump.WriteLarge(dump, 50, 1000, time.Duration(minutes)*time.Minute); err != nil {
		b.Fatal(err)
	}
	layout := filepath.Join(dir, "signal.layout")
	if err := os.WriteFile(layout, []byte(demodump.LargeLayout), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "edr-lite")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/edr-lite").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	page := filepath.Join(dir, "report.html")
	args := []string{"report", dump, "-o", page}
	for i := 0; i < 50; i++ {
		args = append(args, "--schema", demodump.LargeTopic(i)+"="+layout)
	}
	type run struct {
		wall, cpu time.Duration
		rssMiB    float64
	}
	measure := func(args ...string) run {
		cmd := exec.Command(bin, args...)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", args[:2], err, out)
		}
		wall := time.Since(start)
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		return run{wall, cpu, float64(ru.Maxrss) / 1024}
	}
	var reports, verifies []run
	for b.Loop() {
		verifies = append(verifies, measure("verify", dump))
		reports = append(reports, measure(args...))
	}
	st, err := os.Stat(page)
	if err != nil {
		b.Fatal(err)
	}
	med := func(rs []run, f func(run) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	wall := func(r run) float64 { return r.wall.Seconds() }
	cpu := func(r run) float64 { return r.cpu.Seconds() }
	rss := func(r run) float64 { return r.rssMiB }
	ratios := make([]run, len(reports))
	for i := range reports {
		ratios[i] = run{wall: time.Duration(float64(time.Second) * reports[i].wall.Seconds() / verifies[i].wall.Seconds())}
	}
	b.ReportMetric(med(reports, wall), "report-s")
	b.ReportMetric(med(reports, cpu), "report-cpu-s")
	b.ReportMetric(med(reports, rss), "report-rss-MiB")
	b.ReportMetric(float64(st.Size())/(1<<20), "page-MiB")
	b.ReportMetric(med(verifies, wall), "verify-s")
	b.ReportMetric(med(verifies, cpu), "verify-cpu-s")
	b.ReportMetric(med(ratios, wall), "report/verify")
	b.Logf("load average while measuring: %s", loadAvg())
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return string(b[:len(b)-1])
}
