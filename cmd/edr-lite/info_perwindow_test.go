package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/demodump"
)

// mergedDemo writes three demo dumps two minutes apart and merges them
// with the binary (each a 5 s window: gaps of 1m55s between them).
func mergedDemo(t *testing.T, dir string) string {
	t.Helper()
	var ins []string
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("demo%d.pack", i+1))
		if err := demodump.WritePackShifted(p, time.Duration(i)*2*time.Minute); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, p)
	}
	out := filepath.Join(dir, "merged.pack")
	if code, o, errs := runBin(t, append([]string{"merge", "-o", out}, ins...)...); code != 0 {
		t.Fatalf("merge: %d %s %s", code, o, errs)
	}
	return out
}

// TestE2EInfoPerWindow: info of three merged demo dumps gives rates and
// held spans per window, not averaged over the gaps (it said a camera
// rate of about 3.6 Hz and "held 4m5s of 5s"), lists the windows and the
// gaps, and --json carries the windows.
func TestE2EInfoPerWindow(t *testing.T) {
	merged := mergedDemo(t, t.TempDir())
	code, out, errs := runBin(t, "info", merged)
	if code != 0 {
		t.Fatalf("info: %d %s", code, errs)
	}
	for _, want := range []string{"windows:    3 separate windows, 15s in all; 2 gaps between them, 3m50s",
		"    gap   1m55s\n", "in 3 windows (figures below are per window)"} {
		if !strings.Contains(out, want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 3 && strings.Contains(f[0], "/") {
			rows[f[0]] = f
		}
	}
	rate := func(topic string) float64 {
		f := rows[topic]
		if len(f) < 5 || f[4] != "Hz" {
			t.Fatalf("%s: row %q", topic, f)
		}
		v, _ := strconv.ParseFloat(f[3], 64)
		return v
	}
	if r := rate(demodump.Camera); r < 28 || r > 31 {
		t.Errorf("camera rate %.1f Hz, want about 30 (within the windows)", r)
	}
	if r := rate(demodump.Speed); r < 99 || r > 101 {
		t.Errorf("speed rate %.1f Hz, want 100", r)
	}
	held := regexp.MustCompile(`\S+ of 15s in 3 windows`)
	for _, topic := range []string{demodump.Camera, demodump.Speed, demodump.IMU, demodump.Brake} {
		if !held.MatchString(strings.Join(rows[topic], " ")) {
			t.Errorf("%s: held %q, want 'X of 15s in 3 windows'", topic, rows[topic])
		}
	}
	_, js, _ := runBin(t, "info", "--json", merged)
	var in struct {
		Windows []struct {
			FromNs, ToNs int64
			Triggers     []int
			Messages     uint64
			Topics       []struct {
				Name     string
				Messages uint64
				RateHz   float64 `json:"rate_hz"`
			}
		}
	}
	if err := json.Unmarshal([]byte(js), &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Windows) != 3 {
		t.Fatalf("info --json: %d windows", len(in.Windows))
	}
	for k, w := range in.Windows {
		if len(w.Triggers) != 1 || w.Triggers[0] != k || w.Messages < 1890 {
			t.Errorf("window %d: %+v", k, w)
		}
	}
	// one dump: no windows section, as before
	if _, out, _ := runBin(t, "info", filepath.Join(filepath.Dir(merged), "demo1.pack")); strings.Contains(out, "windows:") {
		t.Errorf("one window listed as windows:\n%s", out)
	}
}

// TestE2EInfoOneGap: two merged dumps have one gap between their windows,
// said in the singular (info said "1 gaps between them").
func TestE2EInfoOneGap(t *testing.T) {
	dir := t.TempDir()
	var ins []string
	for i := range 2 {
		p := filepath.Join(dir, fmt.Sprintf("demo%d.pack", i+1))
		if err := demodump.WritePackShifted(p, time.Duration(i)*time.Minute); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, p)
	}
	merged := filepath.Join(dir, "merged.pack")
	if code, o, errs := runBin(t, append([]string{"merge", "-o", merged}, ins...)...); code != 0 {
		t.Fatalf("merge: %d %s %s", code, o, errs)
	}
	code, out, errs := runBin(t, "info", merged)
	if code != 0 || !strings.Contains(out, "windows:    2 separate windows, 10s in all; 1 gap between them, 55s,") {
		t.Errorf("info: exit %d %s\n%s", code, errs, out)
	}
}
