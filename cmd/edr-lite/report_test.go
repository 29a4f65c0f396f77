package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/demodump"
	"github.com/edr-lite/edr-lite/shm"
)

// reportDoc is the part of report --format json the tests read.
type reportDoc struct {
	Version  int   `json:"version"`
	StartNs  int64 `json:"start_ns"`
	EndNs    int64 `json:"end_ns"`
	FocusNs  int64 `json:"focus_ns"`
	Triggers []struct {
		Reason string `json:"reason"`
		TimeNs int64  `json:"time_ns"`
	} `json:"triggers"`
	Topics []struct {
		Name     string `json:"name"`
		Messages uint64 `json:"messages"`
		Decoded  string `json:"decoded"`
		Timing   struct {
			RateHz float64 `json:"rate_hz"`
		} `json:"timing"`
	} `json:"topics"`
	Signals []struct {
		Topic  string       `json:"topic"`
		Field  string       `json:"field"`
		Unit   string       `json:"unit"`
		Points [][2]float64 `json:"points"`
	} `json:"signals"`
	Cameras []struct {
		Topic  string `json:"topic"`
		Frames []struct {
			ThumbBytes int    `json:"thumb_bytes"`
			Missing    string `json:"missing"`
		} `json:"frames"`
	} `json:"cameras"`
	Files []struct {
		Verify string `json:"verify"`
	} `json:"files"`
	Notes []string `json:"notes"`
}

func demoDump(t *testing.T, dir, format string) string {
	t.Helper()
	p := filepath.Join(dir, "demo."+format)
	write := demodump.WritePack
	if format == "mcap" {
		write = demodump.WriteMCAP
	}
	if err := write(p); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	thumbTag  = regexp.MustCompile(`<img src="data:image/jpeg;base64,`)
	remoteURL = regexp.MustCompile(`(?i)(https?|ftp)://|@import|url\(\s*['"]?(https?:|//)`)
)

// TestReportEndToEnd runs report through the binary as a user would: the
// pack demo dump with --schema overrides (HTML file, JSON), the MCAP demo
// dump whose channels carry the types, and every filter flag.
func TestReportEndToEnd(t *testing.T) {
	dir := t.TempDir()
	p := demoDump(t, dir, "pack")
	m := demoDump(t, dir, "mcap")
	schemaArgs, err := demodump.WriteLayouts(dir)
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	for _, a := range schemaArgs {
		flags = append(flags, "--schema", a)
	}
	html := filepath.Join(dir, "out.html")
	code, out, errs := runBin(t, append([]string{"report", p, "-o", html}, flags...)...)
	if code != 0 || out != "report: "+html+"\n" {
		t.Fatalf("report: exit %d\n%s%s", code, out, errs)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(thumbTag.FindAll(page, -1)); n != 9 {
		t.Errorf("%d thumbnails, want 9", n)
	}
	// the one URL: the inlined uPlot's banner (its source) in a script comment
	if m := remoteURL.Find(bytes.ReplaceAll(page, []byte("/*! https://github.com/leeoniya/uPlot ("), nil)); m != nil {
		t.Errorf("page refers to %q", m)
	}
	for _, want := range []string{"hard-brake", "speed (m/s)", "vehicle/imu", ">ok<", "2026-12-02 13:32:22.000000000Z"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("page lacks %q", want)
		}
	}

	doc := func(args ...string) reportDoc {
		t.Helper()
		code, out, errs := runBin(t, append([]string{"report", "--format", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("report --format json %v: exit %d\n%s", args, code, errs)
		}
		var d reportDoc
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return d
	}
	// the MCAP dump says its types: the same signals without --schema
	dp, dm := doc(append([]string{p}, flags...)...), doc(m)
	// (the speed's seq only counts: not plotted)
	if len(dp.Signals) != 8 || len(dm.Signals) != 13 || len(dm.Cameras) != 1 || len(dm.Cameras[0].Frames) != 9 {
		t.Errorf("pack: %d signals; mcap: %d signals, cameras %+v", len(dp.Signals), len(dm.Signals), dm.Cameras)
	}
	mcapPoints := map[string]int{}
	for _, s := range dm.Signals {
		mcapPoints[s.Topic+":"+s.Field] = len(s.Points)
	}
	for _, s := range dp.Signals {
		if n := mcapPoints[s.Topic+":"+s.Field]; n != len(s.Points) {
			t.Errorf("%s %s: %d points from pack with --schema, %d from MCAP", s.Topic, s.Field, len(s.Points), n)
		}
	}
	if dp.Version != 1 || len(dp.Triggers) != 1 || dp.Triggers[0].TimeNs != demodump.TriggerAt || dp.Files[0].Verify != "ok" {
		t.Errorf("json: version %d triggers %+v files %+v", dp.Version, dp.Triggers, dp.Files)
	}
	// without a schema: timeline and timing, no plots, no cameras; a pack
	// file is checked while it is read, an MCAP file by a pass of its own
	// that --no-verify leaves out
	if d := doc(p, "--no-verify"); len(d.Signals) != 0 || len(d.Cameras) != 0 || len(d.Topics) != 5 || d.Files[0].Verify != "ok" {
		t.Errorf("no schema: %d signals, %d cameras, %d topics, verify %q", len(d.Signals), len(d.Cameras), len(d.Topics), d.Files[0].Verify)
	}
	if dm.Files[0].Verify != "ok" {
		t.Errorf("mcap verify %q", dm.Files[0].Verify)
	}
	if d := doc(m, "--no-verify"); d.Files[0].Verify != "not checked" {
		t.Errorf("mcap --no-verify: verify %q", d.Files[0].Verify)
	}
	// filters: --topics, --exclude, --from / --to (offsets from the start), --fields, --thumbs
	d := doc(m, "--topics", "vehicle/*,camera/*", "--exclude", "vehicle/calibration,vehicle/brake_pedal",
		"--from", "2.5s", "--to", "3.5s", "--fields", "vehicle/speed:speed,vehicle/imu:ax", "--thumbs", "3")
	var names []string
	for _, tp := range d.Topics {
		names = append(names, tp.Name)
	}
	if strings.Join(names, ",") != "camera/front,vehicle/imu,vehicle/speed" {
		t.Errorf("topics %v", names)
	}
	if d.StartNs != demodump.T0+25e8 || d.EndNs != demodump.T0+35e8 {
		t.Errorf("range %d..%d, want 2.5s..3.5s", d.StartNs-demodump.T0, d.EndNs-demodump.T0)
	}
	// the trigger's topic (speed) first
	if len(d.Signals) != 2 || d.Signals[0].Field != "speed" || d.Signals[1].Field != "ax" || len(d.Signals[0].Points) != 101 {
		t.Errorf("signals %+v", d.Signals)
	}
	for _, s := range d.Signals {
		for _, pt := range s.Points {
			if int64(pt[0]) < d.StartNs || int64(pt[0]) > d.EndNs {
				t.Fatalf("%s point at %d outside the range", s.Field, int64(pt[0])-demodump.T0)
			}
		}
	}
	if len(d.Cameras) != 1 || len(d.Cameras[0].Frames) != 3 || d.Cameras[0].Frames[1].ThumbBytes == 0 {
		t.Errorf("cameras %+v", d.Cameras)
	}
	// --title, -o - (HTML to standard output), --video-decoder none
	code, out, errs = runBin(t, "report", p, "-o", "-", "--title", "Brake at the depot", "--video-decoder", "none")
	if code != 0 || !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, "<title>Brake at the depot</title>") {
		t.Errorf("-o -: exit %d %s %.200s", code, errs, out)
	}
	// default output name: DUMP.html in the current directory
	cmdDir := t.TempDir()
	cmd := binCommand(t, "report", p)
	cmd.Dir = cmdDir
	if o, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(o), "report: demo.html") {
		t.Errorf("default output: %v %s", err, o)
	} else if _, err := os.Stat(filepath.Join(cmdDir, "demo.html")); err != nil {
		t.Error(err)
	}
}

// TestReportErrors: bad usage exits 2 with what was wrong, an unreadable
// or hostile file exits 1 naming it.
func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	p := demoDump(t, dir, "pack")
	bad := filepath.Join(dir, "bad.layout")
	os.WriteFile(bad, []byte("f32le speed\nf33le x\n"), 0o644)
	junk := filepath.Join(dir, "junk.pack")
	os.WriteFile(junk, []byte("hello world, not a dump"), 0o644)
	cut := filepath.Join(dir, "cut.pack")
	b, _ := os.ReadFile(p)
	b[200] ^= 0xff // a damaged frame
	os.WriteFile(cut, b, 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{p, "--format", "pdf"}, 2, `--format "pdf"`},
		{[]string{p, "--schema", "vehicle/speed=" + bad}, 2, "bad.layout: layout:2:1: unknown type f33le"},
		{[]string{p, "--schema", "vehicle/speed"}, 2, "want TOPIC=LAYOUT_FILE"},
		{[]string{p, "--schema", "vehicle/speed=" + filepath.Join(dir, "nope.layout")}, 2, "nope.layout"},
		{[]string{p, "--fields", ":x"}, 2, "want TOPIC or TOPIC:PATH"},
		{[]string{p, "--topics", "[", "-o", "-"}, 2, "glob \"[\": syntax error"},
		{[]string{p, "--from", "yesterday"}, 2, "--from"},
		{[]string{p, "--thumbs", "0"}, 2, "--thumbs 0"},
		{[]string{"-"}, 2, "standard input"},
		{[]string{}, 2, "wrong number of arguments"},
		{[]string{filepath.Join(dir, "missing.pack")}, 1, "missing.pack"},
		{[]string{junk}, 1, "junk.pack"},
		{[]string{cut, "-o", filepath.Join(dir, "cut.html")}, 1, "cut.pack"},
		{[]string{p, "--from", "4s", "--to", "1s"}, 2, "--from 4s is after --to 1s"},
	} {
		code, _, errs := runBin(t, append([]string{"report"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("report %v: exit %d, stderr %q; want %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
	// a --fields entry that plots nothing (a typo of the topic or the
	// field): a warning naming it and what there is, on stderr and in the
	// page's notes; the entry that does plot is plotted
	typed := filepath.Join(dir, "typed.pack")
	writeTypedDump(t, typed, decodeTestMessages())
	code, out, errs := runBin(t, "report", typed, "--format", "json", "-o", "-", "--fields", "vehicle/sped,vehicle/speed:sped,vehicle/speed:speed")
	var r struct {
		Signals []struct {
			Topic, Field string
		}
		Notes     []string `json:"notes"`
		Unmatched []string `json:"unmatched_options"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("report --fields with typos: exit %d, %v, %s", code, err, errs)
	}
	for _, w := range []string{"warning: --fields vehicle/sped plots nothing: no topic matches vehicle/sped (the topics: ",
		"warning: --fields vehicle/speed:sped plots nothing: no numeric field sped in vehicle/speed (numeric fields: speed"} {
		if !strings.Contains(errs, w) {
			t.Errorf("no %q in\n%s", w, errs)
		}
	}
	if len(r.Unmatched) != 2 || len(r.Signals) != 1 || r.Signals[0].Field != "speed" || !strings.Contains(strings.Join(r.Notes, "\n"), "--fields vehicle/sped plots nothing") {
		t.Errorf("report: signals %+v, unmatched %q, notes %q", r.Signals, r.Unmatched, r.Notes)
	}
	// a --schema of a topic the dump does not hold
	layout := filepath.Join(dir, "speed.layout")
	os.WriteFile(layout, []byte("f32le speed\n"), 0o644)
	if _, _, errs := runBin(t, "report", p, "-o", filepath.Join(dir, "s.html"), "--schema", "vehicle/sped="+layout); !strings.Contains(errs, "warning: --schema vehicle/sped: no such topic, not used (the topics: ") {
		t.Errorf("report --schema of a topic not there: %q", errs)
	}
	// a topic without a schema: says it is not decoded, and how to decode it
	if _, _, errs := runBin(t, "report", p, "-o", filepath.Join(dir, "u.html"), "--fields", "vehicle/speed:speed"); !strings.Contains(errs, "warning: --fields vehicle/speed:speed plots nothing: vehicle/speed not decoded (no schema in the dump: --schema TOPIC=FILE gives one)") {
		t.Errorf("report --fields of an undecoded topic: %q", errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "cut.html")); err == nil {
		t.Error("a failed report left its output file")
	}
	// a file cut short (a crash mid-dump): what is there, and "incomplete"
	short := filepath.Join(dir, "short.pack")
	b, _ = os.ReadFile(p)
	os.WriteFile(short, b[:len(b)*4/5], 0o644)
	code, out, errs = runBin(t, "report", "--format", "json", short)
	var d reportDoc
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || len(d.Files) != 1 || !strings.HasPrefix(d.Files[0].Verify, "incomplete: ") ||
		len(d.Topics) == 0 || !strings.Contains(d.Files[0].Verify, "cut short at offset") {
		t.Errorf("cut file: exit %d %s verify %q, %d topics", code, errs, d.Files[0].Verify, len(d.Topics))
	}
}

// TestGoldenReportJSON pins report --format json of a window of the demo
// dump (re-indented here so that the golden file reads, and diffs, line by
// line).
func TestGoldenReportJSON(t *testing.T) {
	dir := t.TempDir()
	p := demoDump(t, dir, "pack")
	schemaArgs, err := demodump.WriteLayouts(dir)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"report", "--format", "json", p, "--from", "2.9s", "--to", "3.1s", "--fields", "vehicle/speed:speed,vehicle/brake_pedal", "--thumbs", "3"}
	for _, a := range schemaArgs {
		args = append(args, "--schema", a)
	}
	code, out, errs := runCLI(t, args...)
	if code != exitOK || errs != "" {
		t.Fatalf("report: %d %s", code, errs)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(out), "", "  "); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "report.json", scrubDir(b.String(), dir))
}

// binCommand is the built binary as an *exec.Cmd, for a test that sets
// its directory or environment.
func binCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return exec.Command(edrBinary(t), args...)
}

// TestRunReportPages: "edr-lite run" with control.http serves the live
// report at / and the dumps' reports at /dumps/ (the binary, a real shm
// producer, a real HTTP client).
func TestRunReportPages(t *testing.T) {
	dir := t.TempDir()
	shmDir, dumpDir, sock := filepath.Join(dir, "shm"), filepath.Join(dir, "dumps"), filepath.Join(dir, "edr.sock")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(dir, "edr.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
[recorder]
dump_dir = %q
cache_size = "16MiB"
pre = "1s"
post = "200ms"
guard = "50ms"
[rotation]
min_free_disk = 0
[[source.shm]]
dir = %q
[control]
socket = %q
http = %q
`, dumpDir, shmDir, sock, addr)), 0o644)
	os.MkdirAll(shmDir, 0o700)
	cmd := exec.Command(edrBinary(t), "run", "--config", cfg)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	waitFor(t, func() bool { _, err := os.Stat(sock); return err == nil }, "control socket")
	p, err := shm.NewProducer(shmDir, shm.ProducerOptions{Name: "sensor/a"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return ""
		}
		return string(b)
	}
	waitFor(t, func() bool {
		p.Publish(time.Now().UnixNano(), []byte{1, 2, 3, 4})
		return strings.Contains(get("/"), ">sensor/a</text>")
	}, "sensor/a on the live page")
	live := get("/")
	if !strings.Contains(live, `http-equiv="refresh"`) || remoteURL.MatchString(live) {
		t.Errorf("live page:\n%.1500s", live)
	}
	code, out, errs := runBin(t, "trigger", "--socket", sock, "--reason", "http-pages")
	if code != 0 {
		t.Fatalf("trigger: %d %s %s\n%s", code, out, errs, logs.String())
	}
	name := filepath.Base(strings.TrimSpace(out[strings.LastIndex(out, " ")+1:]))
	list := get("/dumps/")
	if !strings.Contains(list, "http-pages") {
		t.Fatalf("dump list:\n%s\ntrigger said %q", list, out)
	}
	m := regexp.MustCompile(`href="([^"?]+\.pack)"`).FindStringSubmatch(list)
	if m == nil {
		t.Fatalf("no dump link in\n%s", list)
	}
	page := get("/dumps/" + m[1])
	if !strings.Contains(page, "http-pages") || !strings.Contains(page, ">sensor/a</text>") || remoteURL.MatchString(page) {
		t.Errorf("dump page (%s):\n%.1500s", name, page)
	}
}

// TestReportVideo: video key frames through the binary, decoded by ffmpeg
// (found on PATH), by the program --video-decoder names, or not at all
// (--video-decoder none): placeholders saying why.
func TestReportVideo(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skipf("ffmpeg not installed (.ci/run installs it): %v", err)
	}
	p := filepath.Join(t.TempDir(), "video.pack")
	if err := demodump.WriteVideo(p); err != nil {
		if errors.Is(err, demodump.ErrNoFFmpeg) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	frames := func(args ...string) []string {
		t.Helper()
		code, out, errs := runBin(t, append([]string{"report", "--format", "json", p, "--thumbs", "5",
			"--schema", demodump.VideoTopic + "=foxglove.CompressedVideo"}, args...)...)
		var d reportDoc
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil || len(d.Cameras) != 1 {
			t.Fatalf("report %v: exit %d %s", args, code, errs)
		}
		var got []string
		for _, f := range d.Cameras[0].Frames {
			if f.ThumbBytes > 0 {
				got = append(got, "thumb")
			} else {
				got = append(got, f.Missing)
			}
		}
		return got
	}
	ff, _ := exec.LookPath("ffmpeg")
	for _, args := range [][]string{nil, {"--video-decoder", ff}} {
		got := frames(args...)
		// the trigger's key frames before and after it and two between
		// (a fifth slot would repeat the trigger's "after" frame)
		if strings.Join(got, ",") != "thumb,thumb,thumb,thumb" {
			t.Errorf("%v: %q", args, got)
		}
	}
	for _, tc := range []struct{ dec, want string }{{"none", "no video decoder of its own"}, {"/nonexistent/ffmpeg", "ffmpeg could not decode"}} {
		if got := frames("--video-decoder", tc.dec); !strings.Contains(got[0], tc.want) {
			t.Errorf("--video-decoder %s: %q", tc.dec, got)
		}
	}
}
