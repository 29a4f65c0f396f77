package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestVendoredUPlot: the uPlot files inlined into the page are the npm
// package's, unchanged, at the version report/testdata/browser pins (when
// npm ci has installed it there).
func TestVendoredUPlot(t *testing.T) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join("testdata", "browser", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	readme, _ := os.ReadFile(filepath.Join("uplot", "README.md"))
	if v := pkg.Dependencies["uplot"]; v == "" || !bytes.Contains(readme, []byte("version **"+v+"**")) ||
		!bytes.Contains([]byte(uplotJS), []byte("(v"+v+")")) {
		t.Errorf("uplot %q in package.json, README.md and the vendored file disagree", v)
	}
	mod := filepath.Join("testdata", "browser", "node_modules", "uplot")
	if _, err := os.Stat(mod); err != nil {
		t.Skipf("uplot not installed (npm ci in testdata/browser; .ci/run does): %v", err)
	}
	for vendored, dist := range map[string]string{"uPlot.iife.min.js": "dist/uPlot.iife.min.js", "uPlot.min.css": "dist/uPlot.min.css", "LICENSE": "LICENSE"} {
		a, err1 := os.ReadFile(filepath.Join("uplot", vendored))
		b, err2 := os.ReadFile(filepath.Join(mod, dist))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("uplot/%s is not the package's %s (%v, %v)", vendored, dist, err1, err2)
		}
	}
}

// TestChartData: the charts' data is JSON with times in seconds from the
// focus, a null in the middle of each gap (where the line breaks), values
// that read back exactly (float32 ones in their shortest form), and
// strings that cannot close the script element.
func TestChartData(t *testing.T) {
	v32 := float64(float32(0.1))
	r := &Report{Signals: []Signal{{Topic: "a</script>", Field: "x",
		Points: []Point{{1e9, v32}, {2e9, 0.1}, {10e9, 3}, {11e9, 4}},
		Gaps:   []Gap{{AtNs: 2e9, DurationNs: 8e9}}}}}
	js := chartData(r, axis{start: 0, end: 12e9, focus: 2e9}, []int{0})
	if bytes.Contains([]byte(js), []byte("</script")) {
		t.Errorf("data can close the script: %s", js)
	}
	var d struct {
		Start, End float64
		Signals    []struct {
			Topic string
			X     []float64
			Y     []*float64
			Gaps  [][2]float64
		}
	}
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	s := d.Signals[0]
	wantX := []float64{-1, 0, 4, 8, 9}
	if d.Start != -2 || d.End != 10 || s.Topic != "a</script>" || len(s.X) != len(wantX) || len(s.Gaps) != 1 || s.Gaps[0] != [2]float64{0, 8} {
		t.Fatalf("data %+v", d)
	}
	for i, x := range wantX {
		if s.X[i] != x {
			t.Errorf("x[%d] = %g, want %g", i, s.X[i], x)
		}
	}
	// a float32 value reads back as the same float32; a float64 one exactly
	if s.Y[2] != nil || float32(*s.Y[0]) != float32(v32) || *s.Y[1] != 0.1 || *s.Y[3] != 3 {
		t.Errorf("y %v %v %v %v", *s.Y[0], *s.Y[1], s.Y[2], *s.Y[3])
	}
}
