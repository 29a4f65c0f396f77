package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/internal/demodump"
	"github.com/edr-lite/edr-lite/report"
)

// demoSchemaArgs writes the demo's layouts into dir and returns the
// report's --schema arguments.
func demoSchemaArgs(t *testing.T, dir string) []string {
	t.Helper()
	sch, err := demodump.WriteLayouts(dir)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, s := range sch {
		args = append(args, "--schema", s)
	}
	return args
}

// TestE2EReportMergedDumps: the report of three demo dumps merged two
// minutes apart, through the binary. Lines never cross a gap: every
// signal's series breaks at the two gaps (--format json's gaps, the SVG
// path moves instead of drawing across); the camera strip shows each
// incident: every trigger has its frame before and after, and no slot
// falls in a gap ("no picture"); the speed's sequence number is not
// plotted (a note says so); the trigger's topic comes first.
func TestE2EReportMergedDumps(t *testing.T) {
	dir := t.TempDir()
	merged := mergedDemo(t, dir)
	sch := demoSchemaArgs(t, dir)
	code, out, errs := runBin(t, append([]string{"report", "--format", "json", "-o", "-", merged}, sch...)...)
	if code != 0 {
		t.Fatalf("report: %d %s", code, errs)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Triggers) != 3 || len(r.Signals) == 0 {
		t.Fatalf("%d triggers, %d signals", len(r.Triggers), len(r.Signals))
	}
	for _, s := range r.Signals {
		if len(s.Gaps) != 2 {
			t.Errorf("%s %s: gaps %+v, want the two between the dumps", s.Topic, s.Field, s.Gaps)
			continue
		}
		for k, g := range s.Gaps {
			if g.DurationNs < 110e9 || g.DurationNs > 120e9 {
				t.Errorf("%s %s: gap %d of %v", s.Topic, s.Field, k, g.DurationNs)
			}
		}
		if s.Field == "seq" {
			t.Errorf("the sequence number is plotted")
		}
	}
	if r.Signals[0].Topic != demodump.Speed {
		t.Errorf("first signal %s, want the trigger's topic", r.Signals[0].Topic)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "field seq only counts") {
		t.Errorf("notes %q", r.Notes)
	}
	// rates within the windows, not over the gaps between them
	for _, tp := range r.Topics {
		want := map[string]float64{demodump.Camera: 30, demodump.Speed: 100, demodump.IMU: 200, demodump.Brake: 50}[tp.Name]
		if want > 0 && (tp.Timing.RateHz < want*0.95 || tp.Timing.RateHz > want*1.02 || tp.Timing.BetweenWindowsNs < 220e9) {
			t.Errorf("%s: rate %.1f Hz (%v between windows left out), want about %g", tp.Name, tp.Timing.RateHz, tp.Timing.BetweenWindowsNs, want)
		}
	}
	if len(r.Cameras) != 1 {
		t.Fatalf("cameras %+v", r.Cameras)
	}
	sides := map[int]map[string]bool{}
	for i, f := range r.Cameras[0].Frames {
		if f.Missing != "" || f.ThumbBytes == 0 {
			t.Errorf("thumbnail %d (target %d): no picture: %s", i, f.TargetNs, f.Missing)
		}
		if f.Trigger > 0 {
			if sides[f.Trigger] == nil {
				sides[f.Trigger] = map[string]bool{}
			}
			sides[f.Trigger][f.Side] = true
			at := r.Triggers[f.Trigger-1].TimeNs
			if f.Side == "before" && (f.TimeNs > at || f.TimeNs < at-100e6) || f.Side == "after" && (f.TimeNs <= at || f.TimeNs > at+100e6) {
				t.Errorf("trigger %d's %s frame at %d, trigger at %d", f.Trigger, f.Side, f.TimeNs, at)
			}
		}
	}
	for k := 1; k <= 3; k++ {
		if !sides[k]["before"] || !sides[k]["after"] {
			t.Errorf("trigger %d: frames %v, want before and after", k, sides[k])
		}
	}
	page := filepath.Join(dir, "merged.html")
	if code, _, errs := runBin(t, append([]string{"report", "-o", page, merged}, sch...)...); code != 0 {
		t.Fatalf("report: %d %s", code, errs)
	}
	b, _ := os.ReadFile(page)
	html := string(b)
	// each signal's SVG path starts three times (M): once per dump
	for _, m := range regexpPathD.FindAllStringSubmatch(html, -1) {
		if n := strings.Count(m[1], "M"); n != 3 {
			t.Errorf("a signal path moves %d times, want 3 (broken at the 2 gaps)", n)
		}
	}
	if n := strings.Count(html, `class="siggap"`); n != 2*len(r.Signals) {
		t.Errorf("%d gap marks in the plots, want %d", n, 2*len(r.Signals))
	}
}

// TestE2EReportFromAsZoom: --from inside the window is a zoom: no gap and
// no "no data held" hatch drawn at the left edge of the axis, where the
// topics' asked windows start before it.
func TestE2EReportFromAsZoom(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "demo.pack")
	if err := demodump.WritePack(p); err != nil {
		t.Fatal(err)
	}
	sch := demoSchemaArgs(t, dir)
	page := filepath.Join(dir, "zoom.html")
	if code, _, errs := runBin(t, append([]string{"report", "-o", page, "--from", "2.5s", p}, sch...)...); code != 0 {
		t.Fatalf("report: %d %s", code, errs)
	}
	b, _ := os.ReadFile(page)
	if n := strings.Count(string(b), `class="missing`); n != 0 {
		t.Errorf("%d 'no data held' marks on a zoomed page", n)
	}
	_, out, _ := runBin(t, append([]string{"report", "--format", "json", "-o", "-", "--from", "2.5s", p}, sch...)...)
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Signals {
		if len(s.Gaps) != 0 {
			t.Errorf("%s %s: gaps %+v on a zoomed report", s.Topic, s.Field, s.Gaps)
		}
	}
	for _, tp := range r.Topics {
		if tp.Name == demodump.Camera {
			continue // the camera's lost frames are a real gap
		}
		if len(tp.Gaps) != 0 {
			t.Errorf("%s: gaps %+v on a zoomed report", tp.Name, tp.Gaps)
		}
	}
}

// regexpPathD finds the d attribute of each signal plot's line.
var regexpPathD = regexp.MustCompile(`<path class="line"[^>]* d="([^"]*)"`)
