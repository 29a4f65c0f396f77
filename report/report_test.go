package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/internal/demodump"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/schema"
)

// demoSchemas are the --schema overrides of the pack demo dump.
func demoSchemas() map[string]schema.Type {
	return map[string]schema.Type{
		demodump.Speed:  demodump.Type(demodump.Speed),
		demodump.Brake:  demodump.Type(demodump.Brake),
		demodump.IMU:    demodump.Type(demodump.IMU),
		demodump.Camera: demodump.Type(demodump.Camera),
	}
}

func writeDemo(t testing.TB, format string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "demo."+format)
	write := demodump.WritePack
	if format == "mcap" {
		write = demodump.WriteMCAP
	}
	if err := write(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// frameNs is the capture time of demo camera frame i from the start.
func frameNs(i int) int64 { return int64(i) * int64(time.Second) / demodump.CameraHz }

func renderHTML(t testing.TB, r *Report, o HTMLOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r, o); err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("REPORT_HTML_OUT"); out != "" { // to look at it
		os.WriteFile(out, b.Bytes(), 0o644)
	}
	return b.String()
}

var (
	remoteRef  = regexp.MustCompile(`(?i)(src|href|xlink:href|action|poster|srcset)\s*=\s*["']?\s*(https?:|//|ftp:)`)
	cssURL     = regexp.MustCompile(`(?i)url\(\s*['"]?([^)'"]*)`)
	importRule = regexp.MustCompile(`(?i)@import`)
	anyURL     = regexp.MustCompile(`(?i)\b(https?|ftp)://`)
	dataThumb  = regexp.MustCompile(`<img src="data:image/jpeg;base64,[A-Za-z0-9+/=]+"`)
	pathD      = regexp.MustCompile(`<path class="line"[^>]* d="([^"]*)"`)
	pathCmd    = regexp.MustCompile(`[MLV]`)
)

// checkSelfContained fails when the page refers to anything outside
// itself: a remote src or href, an @import, a url() that is not a
// fragment or data: URI, a script, or any http(s) URL at all.
func checkSelfContained(t testing.TB, page string) {
	t.Helper()
	if m := remoteRef.FindString(page); m != "" {
		t.Errorf("page refers to a remote resource: %q", m)
	}
	if importRule.MatchString(page) {
		t.Error("page has an @import")
	}
	for _, m := range cssURL.FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[1], "#") && !strings.HasPrefix(m[1], "data:") {
			t.Errorf("page has url(%s)", m[1])
		}
	}
	// the one URL allowed: the inlined uPlot's own banner (its source),
	// inside a script comment
	if m := anyURL.FindString(strings.ReplaceAll(page, "/*! https://github.com/leeoniya/uPlot (", "")); m != "" {
		t.Errorf("page holds a URL: %q", m)
	}
	if scriptSrc.MatchString(page) {
		t.Error("page loads a script from elsewhere")
	}
}

var scriptSrc = regexp.MustCompile(`(?i)<script[^>]*\bsrc\s*=`)

// plottedPoints counts the points of every signal path in the page.
func plottedPoints(page string) int {
	n := 0
	for _, m := range pathD.FindAllStringSubmatch(page, -1) {
		n += len(pathCmd.FindAllString(m[1], -1))
	}
	return n
}

// TestDemoReport renders the demo-like dump's report, pack with --schema
// overrides and MCAP with the types the file records, and checks it
// structurally: topics, trigger, plotted points, thumbnails, accounting,
// nothing external.
func TestDemoReport(t *testing.T) {
	for _, tc := range []struct {
		format  string
		schemas map[string]schema.Type
		from    string
		signals int // the MCAP file types the calibration as JSON: 5 more fields
	}{{"pack", demoSchemas(), "--schema", 9}, {"mcap", nil, "the dump", 14}} {
		t.Run(tc.format, func(t *testing.T) {
			p := writeDemo(t, tc.format)
			r, err := FromDumps([]string{p}, DumpOptions{Options: Options{Schemas: tc.schemas}, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			// the speed's sequence number only counts: not plotted, said
			if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "vehicle/speed: field seq only counts") {
				t.Errorf("notes: %q", r.Notes)
			}
			wantTopics := []string{demodump.Camera, demodump.Brake, demodump.Calibration, demodump.IMU, demodump.Speed}
			if len(r.Topics) != len(wantTopics) {
				t.Fatalf("%d topics", len(r.Topics))
			}
			for i, tp := range r.Topics {
				if tp.Name != wantTopics[i] || tp.Messages != uint64(demodump.Counts[tp.Name]) {
					t.Errorf("topic %d: %s with %d messages, want %s with %d", i, tp.Name, tp.Messages, wantTopics[i], demodump.Counts[wantTopics[i]])
				}
				if tp.Name != demodump.Calibration && !strings.HasSuffix(tp.Decoded, "from "+tc.from) {
					t.Errorf("%s decoded %q, want from %s", tp.Name, tp.Decoded, tc.from)
				}
			}
			cam := r.Topics[0]
			if cam.Accounting.LostAtSource != demodump.CameraGapN || len(cam.Gaps) != 1 ||
				cam.Gaps[0].DurationNs != frameNs(demodump.CameraGap0+demodump.CameraGapN)-frameNs(demodump.CameraGap0-1) {
				t.Errorf("camera accounting %+v gaps %+v", cam.Accounting, cam.Gaps)
			}
			if len(r.Triggers) != 1 || r.Triggers[0].TimeNs != demodump.TriggerAt || r.FocusNs != demodump.TriggerAt {
				t.Fatalf("triggers %+v focus %d", r.Triggers, r.FocusNs)
			}
			// speed (1 field: seq only counts), brake (1), IMU (6): every
			// sample plotted; the calibration's fields (one sample each)
			// are values; the trigger's own topic (speed) comes first
			wantSignals := map[string]int{"vehicle/brake_pedal:pedal": 250, "vehicle/imu:ax": 1000, "vehicle/imu:gz": 1000,
				"vehicle/speed:speed": 500}
			points, charted, values := 0, 0, 0
			for _, s := range r.Signals {
				if s.Values {
					values++
					if s.Topic != demodump.Calibration || s.Count != 1 {
						t.Errorf("%s %s shown as values (%d samples)", s.Topic, s.Field, s.Count)
					}
					continue
				}
				charted++
				points += len(s.Points)
				if n, ok := wantSignals[s.Topic+":"+s.Field]; ok && (int(s.Count) != n || len(s.Points) != n || s.Downsampled) {
					t.Errorf("%s %s: %d samples, %d points, downsampled %v; want %d", s.Topic, s.Field, s.Count, len(s.Points), s.Downsampled, n)
				}
				if len(s.Gaps) != 0 {
					t.Errorf("%s %s: gaps %v", s.Topic, s.Field, s.Gaps)
				}
			}
			if len(r.Signals) != tc.signals-1 || charted != 8 || values != tc.signals-9 || points != 500+250+1000*6 {
				t.Errorf("%d signals (%d charted, %d values) with %d points", len(r.Signals), charted, values, points)
			}
			if r.Signals[0].Topic != demodump.Speed {
				t.Errorf("first signal %s, want the trigger's topic %s", r.Signals[0].Topic, demodump.Speed)
			}
			for _, s := range r.Signals {
				if s.Field == "speed" && (s.Unit != "m/s" || s.Max != 20 || s.Min >= 5) {
					t.Errorf("speed signal %s %g..%g", s.Unit, s.Min, s.Max)
				}
			}
			if len(r.Cameras) != 1 || len(r.Cameras[0].Frames) != DefaultThumbs {
				t.Fatalf("cameras %+v", r.Cameras)
			}
			for i, f := range r.Cameras[0].Frames {
				if f.Thumb == nil || f.Width != demodump.CameraW || f.Height != demodump.CameraH || f.Format != "jpeg" {
					t.Errorf("thumbnail %d: %d bytes %dx%d %q missing %q", i, len(f.Thumb), f.Width, f.Height, f.Format, f.Missing)
				}
				if d := f.TimeNs - f.TargetNs; d > frameNs(1)+1 || d < -frameNs(1)-1 {
					t.Errorf("thumbnail %d: frame %v from its target", i, time.Duration(d))
				}
			}
			// the trigger's frames: the last at or before it, the first after
			sides := map[string]int64{}
			for _, f := range r.Cameras[0].Frames {
				if f.Trigger == 1 {
					sides[f.Side] = f.TimeNs - demodump.T0
				}
			}
			if len(sides) != 2 || sides["before"] != frameNs(90) || sides["after"] != frameNs(91) {
				t.Errorf("the trigger's thumbnails: %v, want before at frame 90 (the trigger's time) and after at 91", sides)
			}
			if f := r.Files[0]; f.Verify != "ok" || f.Size == 0 || !f.Indexed || f.Messages != 1898 {
				t.Errorf("file facts %+v", f)
			}

			page := renderHTML(t, r, HTMLOptions{})
			checkSelfContained(t, page)
			for _, want := range []string{"hard-brake", "lua:hard_brake", "2026-12-02 13:32:22.000000000Z", "speed (m/s)", "ax (m/s^2)",
				"lost at source", "timing", demodump.Camera, ">ok<"} {
				if !strings.Contains(page, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			for _, name := range wantTopics {
				if !strings.Contains(page, `<text class="label" x="202" y=`) || !strings.Contains(page, ">"+name+"</text>") {
					t.Errorf("timeline lacks a lane for %s", name)
				}
			}
			if n := len(dataThumb.FindAllString(page, -1)); n != DefaultThumbs {
				t.Errorf("%d thumbnails in the page, want %d", n, DefaultThumbs)
			}
			if n := plottedPoints(page); n != points {
				t.Errorf("%d points drawn, %d in the report", n, points)
			}
			if n := strings.Count(page, `<line class="trigger"`); n != 1+charted {
				t.Errorf("%d trigger lines, want one in the timeline and one per plot (%d)", n, 1+charted)
			}
			if n := strings.Count(page, `<div class="uchart" data-signal=`); n != charted {
				t.Errorf("%d interactive charts, want %d", n, charted)
			}
			if values > 0 && !strings.Contains(page, "Latched and single-sample values") {
				t.Error("no values table")
			}
		})
	}
}

// TestReportTypesSurviveMerge: a typed MCAP dump merged into a pack dump
// reports the same signals and cameras from the pack dump's own types.
// Pack dumps carry type names only until typed topics land; until then
// DumpTopicType says nothing for them and the test skips, saying so.
func TestReportTypesSurviveMerge(t *testing.T) {
	m := writeDemo(t, "mcap")
	p := filepath.Join(t.TempDir(), "merged.pack")
	if _, err := dumpfile.Merge([]string{m}, p, pack.WriterOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	src, err := dumpfile.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	typed := 0
	for i := range src.Topics() {
		if _, ok := DumpTopicType(src, &src.Topics()[i]); ok {
			typed++
		}
	}
	src.Close()
	if typed == 0 {
		t.Skip("pack dumps do not record topic schemas yet (typed topics, issue #16): DumpTopicType has nothing to return")
	}
	want, err := FromDumps([]string{m}, DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := FromDumps([]string{p}, DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Signals) != len(want.Signals) || len(got.Cameras) != len(want.Cameras) {
		t.Fatalf("merged pack: %d signals, %d cameras; MCAP: %d, %d", len(got.Signals), len(got.Cameras), len(want.Signals), len(want.Cameras))
	}
	for i := range want.Signals {
		if g, w := got.Signals[i], want.Signals[i]; g.Field != w.Field || len(g.Points) != len(w.Points) || g.Max != w.Max {
			t.Errorf("signal %d: %s %d points max %g, want %s %d %g", i, g.Field, len(g.Points), g.Max, w.Field, len(w.Points), w.Max)
		}
	}
}

// TestTimelineShortWindows: where a topic's held window falls short of
// the asked one, the lane says why, as the dump recorded it.
func TestTimelineShortWindows(t *testing.T) {
	r := &Report{StartNs: 0, EndNs: 10e9, FocusNs: 5e9, Topics: []Topic{
		{Name: "late", Messages: 2, FirstNs: 3e9, LastNs: 10e9, AskedFromNs: 0, AskedToNs: 10e9,
			Accounting: Accounting{StartShort: "not_recorded"}},
		{Name: "gone", Messages: 2, FirstNs: 0, LastNs: 6e9, AskedFromNs: 0, AskedToNs: 10e9,
			Accounting: Accounting{EndShort: "producer_offline"}},
		{Name: "evicted", Messages: 2, FirstNs: 4e9, LastNs: 10e9, AskedFromNs: 1e9, AskedToNs: 10e9,
			Accounting: Accounting{Overwritten: 7}},
	}}
	svg := timelineSVG(r, axis{start: 0, end: 10e9, focus: 5e9})
	for _, want := range []string{
		`class="missing nodata"`, "asked from T−5s, first message at T−2s: the topic was not recorded yet",
		"asked to T+5s, last message at T+1s: the producer went offline",
		`class="missing overwritten"`, "asked from T−4s, first message at T−1s: 7 messages overwritten before the dump read them",
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
}
