package report

import (
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/internal/demodump"
	"github.com/edr-lite/edr-lite/pack"
)

// chromium returns Debian's chromium, or skips: the browser test needs a
// real browser and never downloads one.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("needs Debian's chromium for the browser test (apt-get install chromium; .ci/run installs it)")
	return ""
}

type shotResult struct {
	Console    []string `json:"console"`
	PageErrors []string `json:"pageErrors"`
	Requests   []string `json:"requests"`
	Images     []struct {
		Complete bool `json:"complete"`
		Width    int  `json:"width"`
	} `json:"images"`
	Plot     *rect `json:"plot"`
	Timeline *rect `json:"timeline"`
}

type rect struct{ X, Y, Width, Height float64 }

// TestReportInBrowser opens the demo-like dump's page in headless
// chromium: no console or page errors, no request leaves the page, every
// thumbnail decodes, and the screenshot is not blank (not uniform; the
// first signal plot and the timeline have ink across their width).
func TestReportInBrowser(t *testing.T) {
	exe := chromium(t)
	p := writeDemo(t, "pack")
	r, err := FromDumps([]string{p}, DumpOptions{Options: Options{Schemas: demoSchemas()}, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte(renderHTML(t, r, HTMLOptions{})), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	res, ok := playwrightShot(t, exe, page, shot)
	if !ok {
		res = cliShot(t, exe, page, shot)
	}
	if len(res.Console)+len(res.PageErrors)+len(res.Requests) > 0 {
		t.Errorf("console %q, page errors %q, requests %q", res.Console, res.PageErrors, res.Requests)
	}
	img := readPNG(t, shot)
	if n := distinctColors(img, 1000); n < 50 {
		t.Errorf("screenshot has %d colours: blank", n)
	}
	if ok {
		if len(res.Images) != DefaultThumbs {
			t.Errorf("%d images, want %d", len(res.Images), DefaultThumbs)
		}
		for i, im := range res.Images {
			if !im.Complete || im.Width != DefaultThumbWidth {
				t.Errorf("image %d did not decode: %+v", i, im)
			}
		}
		if res.Plot == nil || res.Timeline == nil {
			t.Fatalf("no plot (%v) or timeline (%v) on the page", res.Plot, res.Timeline)
		}
		if f := inkColumns(img, *res.Plot); f < 0.9 {
			t.Errorf("the first plot has ink in %.0f%% of its columns", 100*f)
		}
		if f := inkColumns(img, *res.Timeline); f < 0.9 {
			t.Errorf("the first timeline lane has ink in %.0f%% of its columns", 100*f)
		}
	} else if f := inkColumns(img, rect{labelW, 0, plotW, float64(img.Bounds().Dy())}); f < 0.9 {
		t.Errorf("the page has ink in %.0f%% of the plot columns", 100*f)
	}
}

// playwrightShot drives chromium with playwright-core (npm ci in
// testdata/browser); false when node or the package is not there.
func playwrightShot(t *testing.T, exe, page, shot string) (shotResult, bool) {
	var res shotResult
	dir, _ := filepath.Abs(filepath.Join("testdata", "browser"))
	if _, err := exec.LookPath("node"); err != nil {
		t.Logf("node not found (%v): chromium --screenshot instead of playwright-core", err)
		return res, false
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		t.Logf("playwright-core not installed (npm ci in %s): chromium --screenshot instead", dir)
		return res, false
	}
	out, err := exec.Command("node", filepath.Join(dir, "shot.mjs"), page, shot, exe).Output()
	if err != nil {
		t.Fatalf("node shot.mjs: %v\n%s", err, out)
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("shot.mjs output: %v\n%s", err, out)
	}
	return res, true
}

var consoleLine = regexp.MustCompile(`(?m)^.*:CONSOLE.*$`)

// cliShot is chromium's own --screenshot, console messages read from its
// log.
func cliShot(t *testing.T, exe, page, shot string) shotResult {
	cmd := exec.Command(exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0", "--window-size=1420,3000",
		"--screenshot="+shot, "file://"+page)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	return shotResult{Console: consoleLine.FindAllString(string(out), -1)}
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// distinctColors counts colours up to limit.
func distinctColors(img image.Image, limit int) int {
	seen := map[color.RGBA]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bb, _ := img.At(x, y).RGBA()
			seen[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bb >> 8), 255}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

// inkColumns returns the fraction of the columns of r holding a dark pixel
// (luminance below 60%): the line of a plot, the rate of a lane. Grid
// lines and backgrounds are lighter.
func inkColumns(img image.Image, r rect) float64 {
	b := img.Bounds()
	x0, x1 := max(int(r.X)+2, b.Min.X), min(int(r.X+r.Width)-2, b.Max.X)
	y0, y1 := max(int(r.Y)+1, b.Min.Y), min(int(r.Y+r.Height)-1, b.Max.Y)
	if x1 <= x0 || y1 <= y0 {
		return 0
	}
	ink := 0
	for x := x0; x < x1; x++ {
		for y := y0; y < y1; y++ {
			c, _ := img.At(x, y).(color.RGBA)
			if c == (color.RGBA{}) {
				cr, cg, cb, _ := img.At(x, y).RGBA()
				c = color.RGBA{uint8(cr >> 8), uint8(cg >> 8), uint8(cb >> 8), 255}
			}
			if 299*int(c.R)+587*int(c.G)+114*int(c.B) < 600*255 {
				ink++
				break
			}
		}
	}
	return float64(ink) / float64(x1-x0)
}

// TestInkChecks: the blank-page checks do fail on a blank or uniform
// picture.
func TestInkChecks(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 200, 100))
	for i := range img.Pix {
		img.Pix[i] = 250
	}
	if n := distinctColors(img, 50); n != 1 {
		t.Errorf("uniform picture: %d colours", n)
	}
	if f := inkColumns(img, rect{0, 0, 200, 100}); f != 0 {
		t.Errorf("blank picture: ink in %g of the columns", f)
	}
	for x := 0; x < 200; x++ {
		img.SetRGBA(x, 50+x%20, color.RGBA{31, 95, 168, 255})
	}
	if f := inkColumns(img, rect{0, 0, 200, 100}); f < 0.9 {
		t.Errorf("a line across: ink in %g of the columns", f)
	}
	if !strings.Contains(consoleLine.FindString("[1:2:INFO:CONSOLE(3)] \"x\"\nother"), "CONSOLE") {
		t.Error("console line not found")
	}
}

type chartState struct {
	Min, Max float64
	Left     float64
	Idx      *int
	Value    string
}

type interactResult struct {
	Console    []string `json:"console"`
	PageErrors []string `json:"pageErrors"`
	Requests   []string `json:"requests"`
	Charts     []struct {
		Signal string
		Points int
		Breaks int
		Canvas bool
	} `json:"charts"`
	Steps map[string][]chartState `json:"steps"`
}

// TestReportChartsInBrowser opens the report of three demo dumps merged
// (two minutes apart) in headless chromium and uses its charts as a person
// would (testdata/browser/interact.mjs): each plotted field is a chart
// whose line breaks at the two gaps; a drag across the first chart zooms
// every chart to the same range; the pan button moves them all by a
// quarter; the wheel zooms out; the mouse over one chart puts the cursor
// on every chart at the same instant, each reading its value; no error,
// no request leaves the page.
func TestReportChartsInBrowser(t *testing.T) {
	exe := chromium(t)
	dir := t.TempDir()
	var ins []string
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("demo%d.pack", i+1))
		if err := demodump.WritePackShifted(p, time.Duration(i)*2*time.Minute); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, p)
	}
	merged := filepath.Join(dir, "merged.pack")
	if _, err := dumpfile.Merge(ins, merged, pack.WriterOptions{Writer: "edr-lite merge"}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := FromDumps([]string{merged}, DumpOptions{Options: Options{Schemas: demoSchemas()}})
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte(renderHTML(t, r, HTMLOptions{})), 0o644); err != nil {
		t.Fatal(err)
	}
	bdir, _ := filepath.Abs(filepath.Join("testdata", "browser"))
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("node not found (%v): the charts are driven with playwright-core", err)
	}
	if _, err := os.Stat(filepath.Join(bdir, "node_modules", "playwright-core")); err != nil {
		t.Skipf("playwright-core not installed (npm ci in %s; .ci/run does)", bdir)
	}
	out, err := exec.Command("node", filepath.Join(bdir, "interact.mjs"), page, filepath.Join(dir, "shot.png"), exe).Output()
	if err != nil {
		t.Fatalf("node interact.mjs: %v\n%s", err, out)
	}
	var res interactResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("interact.mjs output: %v\n%s", err, out)
	}
	if len(res.Console)+len(res.PageErrors)+len(res.Requests) > 0 {
		t.Fatalf("console %q, page errors %q, requests %q", res.Console, res.PageErrors, res.Requests)
	}
	charted := 0
	for _, s := range r.Signals {
		if !s.Values {
			charted++
		}
	}
	if charted == 0 || len(res.Charts) != charted {
		t.Fatalf("%d charts on the page, %d plotted signals", len(res.Charts), charted)
	}
	for _, c := range res.Charts {
		if !c.Canvas || c.Breaks != 2 {
			t.Errorf("chart %s: canvas %v, %d breaks in its line, want 2 (the gaps between the dumps)", c.Signal, c.Canvas, c.Breaks)
		}
	}
	same := func(step string) []chartState {
		t.Helper()
		st := res.Steps[step]
		if len(st) != charted {
			t.Fatalf("%s: %d charts", step, len(st))
		}
		for i, c := range st {
			if math.Abs(c.Min-st[0].Min) > 1e-9 || math.Abs(c.Max-st[0].Max) > 1e-9 {
				t.Errorf("%s: chart %d shows %g..%g, the first %g..%g", step, i, c.Min, c.Max, st[0].Min, st[0].Max)
			}
		}
		return st
	}
	init, zoomed, panned, wheeled, cursor := same("initial"), same("zoomed"), same("panned"), same("wheeled"), same("cursor")
	span := func(s []chartState) float64 { return s[0].Max - s[0].Min }
	if math.Abs(span(init)-float64(r.EndNs-r.StartNs)/1e9) > 1e-6 {
		t.Errorf("initial range %g s, the axis %g s", span(init), float64(r.EndNs-r.StartNs)/1e9)
	}
	if f := span(zoomed) / span(init); f < 0.1 || f > 0.3 {
		t.Errorf("a drag across 20%% of the chart zoomed to %.2f of the range", f)
	}
	if d := (panned[0].Min - zoomed[0].Min) / span(zoomed); math.Abs(d-0.25) > 1e-6 || math.Abs(span(panned)-span(zoomed)) > 1e-6 {
		t.Errorf("pan moved the view by %.3f of its width (span %g -> %g), want 0.25", d, span(zoomed), span(panned))
	}
	if span(wheeled) <= span(panned) {
		t.Errorf("the wheel did not zoom out: %g -> %g", span(panned), span(wheeled))
	}
	for i, c := range cursor {
		if c.Left < 0 || math.Abs(c.Left-cursor[0].Left) > 1 || c.Idx == nil || c.Value == "" || c.Value == "-" {
			t.Errorf("shared cursor: chart %d at %g (first at %g), index %v, value %q", i, c.Left, cursor[0].Left, c.Idx, c.Value)
		}
	}
}
