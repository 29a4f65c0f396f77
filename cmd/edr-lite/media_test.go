package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/media"
)

// The camera e2e tests: JPEG folders and MP4 files into dumps (import,
// or given directly to merge, replay, info, cat) and back out (export
// --format jpeg-dir | mp4), through the built binary. ffmpeg / ffprobe
// make and check the videos (Debian's ffmpeg, installed by .ci/run).

// mediaT0 is 2026-12-02T13:32:22Z, the time the test JPEGs are named by.
const mediaT0 = int64(1796218342) * 1e9

func needFF(t *testing.T) {
	t.Helper()
	for _, p := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("needs %s (Debian package ffmpeg, installed by .ci/run): %v", p, err)
		}
	}
}

// testJPEG encodes a small picture that differs with i.
func testJPEG(t *testing.T, i int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 32, 24))
	for y := range 24 {
		for x := range 32 {
			img.Set(x, y, color.RGBA{uint8(x * 8), uint8(y * 10), uint8(i * 40), 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeJPEGDir writes n JPEGs named by their time (19-digit ns, and one
// ISO 8601 name), a text file and a broken .jpg; it returns the times.
func writeJPEGDir(t *testing.T, dir string, n int, t0, step int64) map[int64][]byte {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	want := map[int64][]byte{}
	for i := range n {
		ts := t0 + int64(i)*step
		name := fmt.Sprintf("%019d.jpg", ts)
		if i == 1 { // another pattern the reader parses
			name = "cam_" + time.Unix(0, ts).UTC().Format("20060102T150405.000000000Z") + ".jpeg"
		}
		b := testJPEG(t, i)
		want[ts] = b
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "README.txt"), []byte("not an image"), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.jpg"), []byte("GIF89a not a jpeg"), 0o644)
	return want
}

// TestMediaJPEGRoundTrip: a JPEG folder -> pack -> jpeg-dir gives the same
// files, byte for byte, at the same times (named as the reader parses);
// skipped files are named, never a crash; info and cat show the topic.
func TestMediaJPEGRoundTrip(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "front")
	want := writeJPEGDir(t, in, 5, mediaT0+52e6, 33_333_333)
	pk := filepath.Join(dir, "front.pack")
	code, out, errs := runBin(t, "import", "--format", "jpeg-dir", in, "--topic", "camera/front", "-o", pk)
	if code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	for _, f := range []string{"README.txt", "broken.jpg"} {
		if !strings.Contains(errs, "warning: skipped "+filepath.Join(in, f)+": ") {
			t.Errorf("import does not name skipped %s:\n%s", f, errs)
		}
	}
	checkGolden(t, "media/import_jpeg.txt", scrubDir(out+errs, dir))
	code, out, errs = runBin(t, "info", in)
	if code != 0 {
		t.Fatalf("info DIR: %d %s", code, errs)
	}
	checkGolden(t, "media/info_jpeg_dir.txt", scrubDir(out, dir))
	code, out, errs = runBin(t, "info", pk)
	if code != 0 {
		t.Fatalf("info: %d %s", code, errs)
	}
	checkGolden(t, "media/info_jpeg_pack.txt", scrubDir(out, dir))

	// cat --decode shows each image's type, format, time and bytes (their size)
	code, out, errs = runBin(t, "cat", pk, "--decode")
	if code != 0 {
		t.Fatalf("cat --decode: %d %s", code, errs)
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Ts   int64  `json:"ts"`
			Type string `json:"type"`
			Data struct {
				Format  string `json:"format"`
				FrameID string `json:"frame_id"`
				Data    []byte `json:"data"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("cat --decode line %q: %v", l, err)
		}
		if m.Type != "foxglove.CompressedImage" || m.Data.Format != "jpeg" || m.Data.FrameID != "camera/front" ||
			!bytes.Equal(m.Data.Data, want[m.Ts]) {
			t.Errorf("cat --decode: %s %s %q: %d bytes, want the %d bytes of the image at %d", m.Type, m.Data.Format, m.Data.FrameID,
				len(m.Data.Data), len(want[m.Ts]), m.Ts)
		}
		n++
	}
	if n != len(want) {
		t.Errorf("cat --decode: %d messages, want %d", n, len(want))
	}

	back := filepath.Join(dir, "back")
	code, out, errs = runBin(t, "export", "--format", "jpeg-dir", "--topics", "camera/front", pk, "-o", back)
	if code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	checkGolden(t, "media/export_jpeg.txt", scrubDir(out, dir))
	ents, err := os.ReadDir(back)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(want) {
		t.Fatalf("exported %d files, want %d", len(ents), len(want))
	}
	for _, e := range ents {
		ts, err := strconv.ParseInt(strings.TrimSuffix(e.Name(), ".jpg"), 10, 64)
		if err != nil || len(e.Name()) != 19+4 {
			t.Fatalf("exported file %q is not named <19-digit ns>.jpg", e.Name())
		}
		b, _ := os.ReadFile(filepath.Join(back, e.Name()))
		if !bytes.Equal(b, want[ts]) {
			t.Errorf("%s: %d bytes differ from the input at that time (%d bytes)", e.Name(), len(b), len(want[ts]))
		}
	}
	// and the exported folder reads back the same: import it again
	pk2 := filepath.Join(dir, "again.pack")
	if code, _, errs := runBin(t, "import", "--format", "jpeg-dir", back, "--topic", "camera/front", "-o", pk2); code != 0 || errs != "" {
		t.Fatalf("import of the export: %d %s", code, errs)
	}
	a, b := catJSONL(t, pk), catJSONL(t, pk2)
	if !slices.Equal(a, b) {
		t.Errorf("the export imported again differs:\n%v\n%v", a, b)
	}
	// a second export into the same folder is refused
	if code, _, errs := runBin(t, "export", "--format", "jpeg-dir", pk, "-o", back); code != 1 || !strings.Contains(errs, "not empty") {
		t.Errorf("export into a non-empty folder: %d %s", code, errs)
	}
	// --time rate
	pk3 := filepath.Join(dir, "rate.mcap")
	code, _, errs = runBin(t, "import", "--format", "jpeg-dir", in, "--time", "rate", "--start", "2026-12-02T13:32:22Z", "--fps", "10", "-o", pk3)
	if code != 0 {
		t.Fatalf("import --time rate: %d %s", code, errs)
	}
	for i, l := range catJSONL(t, pk3) {
		if want := fmt.Sprintf("camera/front %d", mediaT0+int64(i)*100e6); l != want {
			t.Errorf("rate message %d: %s, want %s", i, l, want)
		}
	}
	if code, _, errs := runBin(t, "import", "--format", "jpeg-dir", in, "--time", "rate", "-o", filepath.Join(dir, "x.pack")); code != 2 || !strings.Contains(errs, "--fps") {
		t.Errorf("--time rate without --fps: %d %s", code, errs)
	}
}

// catJSONL returns "topic ts" per message of a dump, in order.
func catJSONL(t *testing.T, path string) []string {
	t.Helper()
	code, out, errs := runBin(t, "cat", path, "--jsonl")
	if code != 0 {
		t.Fatalf("cat %s: %d %s", path, code, errs)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Topic string `json:"topic"`
			Ts    int64  `json:"ts"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("cat --jsonl line %q: %v", l, err)
		}
		lines = append(lines, fmt.Sprintf("%s %d", m.Topic, m.Ts))
	}
	return lines
}

// makeMP4 has ffmpeg encode 2 s of test picture at 25 fps as H.264 with
// B-frames (so ctts matters), fragmented or not, with a creation time.
func makeMP4(t *testing.T, path string, fragmented bool, creation string) {
	t.Helper()
	args := []string{"-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-t", "2",
		"-c:v", "libx264", "-bf", "2", "-g", "15", "-pix_fmt", "yuv420p"}
	if fragmented {
		args = append(args, "-movflags", "frag_keyframe+empty_moov")
	}
	if creation != "" {
		args = append(args, "-metadata", "creation_time="+creation)
	}
	if out, err := exec.Command("ffmpeg", append(args, path)...).CombinedOutput(); err != nil {
		t.Skipf("ffmpeg cannot make an H.264 MP4 (libx264?): %v\n%s", err, out)
	}
}

// ffprobePackets lists an MP4's video packets as ffprobe sees them: pts,
// dts and duration (in the stream's time base, as seconds), size, flags.
func ffprobePackets(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
		"packet=pts_time,dts_time,duration_time,size,flags", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestMediaMP4RoundTrip: MP4s made by ffmpeg (H.264 with B-frames, plain
// and fragmented) -> pack -> MP4 give the same packets per ffprobe
// -show_packets (times, sizes, key flags), and the same samples byte for
// byte (ffmpeg's framemd5 of the copied stream).
func TestMediaMP4RoundTrip(t *testing.T) {
	needFF(t)
	for _, frag := range []bool{false, true} {
		t.Run(fmt.Sprintf("fragmented=%v", frag), func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.mp4")
			makeMP4(t, in, frag, "")
			pk := filepath.Join(dir, "v.pack")
			code, out, errs := runBin(t, "import", "--format", "mp4", in, "--topic", "camera/video", "--start", "2026-12-02T13:32:22Z", "-o", pk)
			if code != 0 {
				t.Fatalf("import: %d %s", code, errs)
			}
			if !frag {
				checkGolden(t, "media/import_mp4.txt", scrubDir(out, dir))
			}
			back := filepath.Join(dir, "back.mp4")
			if code, _, errs := runBin(t, "export", "--format", "mp4", "--topics", "camera/video", pk, "-o", back, "--start", "2026-12-02T13:32:22Z"); code != 0 {
				t.Fatalf("export: %d %s", code, errs)
			}
			a, b := ffprobePackets(t, in), ffprobePackets(t, back)
			if len(a) != 50 || !slices.Equal(a, b) {
				t.Fatalf("ffprobe packets differ (%d, %d):\n%s\n---\n%s", len(a), len(b), strings.Join(a, "\n"), strings.Join(b, "\n"))
			}
			if ma, mb := framemd5(t, in), framemd5(t, back); !slices.Equal(ma, mb) {
				t.Errorf("samples differ:\n%s\n---\n%s", strings.Join(ma, "\n"), strings.Join(mb, "\n"))
			}
			// the pack's times: capture = decode time, producer = presentation time, from --start
			var first struct {
				GenTs int64 `json:"gen_ts"`
			}
			_, out, _ = runBin(t, "cat", pk, "--jsonl", "--limit", "1")
			json.Unmarshal([]byte(out), &first)
			pts, _ := strconv.ParseFloat(strings.Split(a[0], ",")[0], 64)
			if want := mediaT0 + int64(pts*1e6+0.5)*1e3; first.GenTs != want {
				t.Errorf("first sample presented at %d, want --start + ffprobe's %v s = %d", first.GenTs, pts, want)
			}
		})
	}
}

// framemd5 is ffmpeg's MD5 of every video packet, copied as stored
// (length-prefixed NAL units), with its times.
func framemd5(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-map", "0:v:0", "-c", "copy", "-f", "framemd5", "-").Output()
	if err != nil {
		t.Fatalf("ffmpeg framemd5 %s: %v", path, err)
	}
	var lines []string // size and MD5 (the times are in the file's time base)
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Split(l, ","); !strings.HasPrefix(l, "#") && len(f) == 6 {
			lines = append(lines, strings.TrimSpace(f[4])+" "+strings.TrimSpace(f[5]))
		}
	}
	return lines
}

// TestMediaMergeReplay: a demo dump, a JPEG folder and an MP4 (its
// creation time inside the demo's window) given directly to merge,
// replay, rules test and cat are one timeline in time order.
func TestMediaMergeReplay(t *testing.T) {
	needFF(t)
	dir := t.TempDir()
	code, _, errs := runBin(t, "demo", "--dir", dir, "--duration", "4s")
	if code != 0 {
		t.Fatalf("demo: %d %s", code, errs)
	}
	dumps, _ := filepath.Glob(filepath.Join(dir, "*.pack"))
	if len(dumps) == 0 {
		t.Fatal("demo wrote no dump")
	}
	demo := dumps[0]
	dm := catJSONL(t, demo)
	first, _ := strconv.ParseInt(strings.Fields(dm[0])[1], 10, 64)
	end, _ := strconv.ParseInt(strings.Fields(dm[len(dm)-1])[1], 10, 64)
	start := (first/1e9 + 1) * 1e9 // whole seconds: mvhd's resolution
	// The MP4's first samples carry their decode times, which B-frames put
	// up to two frames (80 ms) before its creation time: keep that clear of
	// the demo's first message (it failed one run in ten or so when the
	// demo started in the last 80 ms before a whole second).
	if start-first < 200e6 {
		start += 1e9
	}
	if end < start+1e9 {
		t.Fatalf("the demo dump holds %d..%d: too short to interleave", first, end)
	}
	front := filepath.Join(dir, "dashcam") // the demo has a camera/front of its own
	writeJPEGDir(t, front, 6, start+10e6, 100e6)
	video := filepath.Join(dir, "rear.mp4")
	makeMP4(t, video, false, time.Unix(0, start).UTC().Format(time.RFC3339))

	merged := filepath.Join(dir, "all.pack")
	code, _, errs = runBin(t, "merge", demo, front, video, "-o", merged)
	if code != 0 {
		t.Fatalf("merge: %d %s", code, errs)
	}
	if !strings.Contains(errs, "skipped "+filepath.Join(front, "broken.jpg")) {
		t.Errorf("merge does not name the skipped file:\n%s", errs)
	}
	lines := catJSONL(t, merged)
	var last int64
	seen := map[string]int{}
	for _, l := range lines {
		topic, ts, _ := strings.Cut(l, " ")
		n, _ := strconv.ParseInt(ts, 10, 64)
		if n < last {
			t.Fatalf("merge out of time order at %s (after %d)", l, last)
		}
		last = n
		seen[topic]++
	}
	if seen["camera/dashcam"] != 6 || seen["camera/rear"] != 50 || len(seen) < 3 {
		t.Fatalf("merged topics %v", seen)
	}
	// the camera messages are interleaved with the demo's, not appended
	mine := func(l string) bool {
		return strings.HasPrefix(l, "camera/dashcam ") || strings.HasPrefix(l, "camera/rear ")
	}
	firstCam := slices.IndexFunc(lines, mine)
	if firstCam <= 0 || !slices.ContainsFunc(lines[firstCam:], func(l string) bool { return !mine(l) }) {
		t.Errorf("camera messages not interleaved with the demo's (demo %d..%d, cameras from %d; first camera message at line %d of %d)", first, end, start, firstCam, len(lines))
	}
	// the same inputs given directly to cat-like verbs: replay and rules test
	code, out, errs := runBin(t, "replay", demo, front, video, "-o", "discard", "--asfast")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("replayed %d messages", len(lines))) {
		t.Errorf("replay of the three inputs: %d %s %s (want %d messages)", code, out, errs, len(lines))
	}
	code, out, errs = runBin(t, "rules", "test", "--rules", "builtin:hard_brake", demo, front, video)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d messages", len(lines))) {
		t.Errorf("rules test of the three inputs: %d %s %s", code, out, errs)
	}
}

// TestMediaMCAPNodeDecode: an MCAP export of an imported MP4 passes the
// reference @mcap/core reader and decodes, with @mcap/support's protobuf
// decoder (the channel's FileDescriptorSet), as foxglove.CompressedVideo
// with the MP4's presentation times (mcap/testdata/node/decode_camera.mjs).
func TestMediaMCAPNodeDecode(t *testing.T) {
	needFF(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.mp4")
	makeMP4(t, in, false, "")
	mc := filepath.Join(dir, "v.mcap")
	if code, _, errs := runBin(t, "import", "--format", "mp4", in, "--topic", "camera/video", "--start", "2026-12-02T13:32:22Z", "-o", mc); code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	pk := filepath.Join(dir, "v.pack")
	if code, _, errs := runBin(t, "import", "--format", "mp4", in, "--topic", "camera/video", "--start", "2026-12-02T13:32:22Z", "-o", pk); code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	ex := filepath.Join(dir, "export.mcap")
	if code, _, errs := runBin(t, "export", "--format", "mcap", pk, "-o", ex, "--compression", "zstd"); code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	var bytes int
	for _, l := range catJSONLSizes(t, pk) {
		bytes += l
	}
	for _, f := range []string{mc, ex} {
		checkWithMCAPCoreCmd(t, f, "camera/video", 50, bytes)
	}
	nodeDir, _ := filepath.Abs(filepath.Join("..", "..", "mcap", "testdata", "node"))
	cmd := exec.Command("node", "decode_camera.mjs", mc, ex)
	cmd.Dir = nodeDir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node decode_camera.mjs: %v", err)
	}
	type topic struct {
		Schema     string   `json:"schema"`
		Messages   int      `json:"messages"`
		Formats    []string `json:"formats"`
		FrameIDs   []string `json:"frameIds"`
		Timestamps []string `json:"timestamps"`
		SHA256     string   `json:"sha256"`
	}
	var res map[string]struct {
		Error  string           `json:"error"`
		Topics map[string]topic `json:"topics"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("decode_camera.mjs output: %v\n%s", err, out)
	}
	// the presentation times ffprobe gives, from --start
	var want []string
	for _, p := range ffprobePackets(t, in) {
		sec, _ := strconv.ParseFloat(strings.Split(p, ",")[0], 64)
		want = append(want, strconv.FormatInt(mediaT0+int64(sec*1e6+0.5)*1e3, 10))
	}
	for _, f := range []string{mc, ex} {
		r := res[f]
		if r.Error != "" {
			t.Fatalf("%s: %s", f, r.Error)
		}
		v := r.Topics["camera/video"]
		if v.Schema != "foxglove.CompressedVideo" || v.Messages != 50 || !slices.Equal(v.Formats, []string{"h264"}) ||
			!slices.Equal(v.FrameIDs, []string{"camera/video"}) {
			t.Errorf("%s: decoded %+v", f, v)
		}
		if !slices.Equal(v.Timestamps, want) {
			t.Errorf("%s: timestamps %v, want %v", f, v.Timestamps, want)
		}
		if f == ex && v.SHA256 != res[mc].Topics["camera/video"].SHA256 {
			t.Errorf("the export's video data differs from the import's")
		}
	}
}

// catJSONLSizes returns each message's size.
func catJSONLSizes(t *testing.T, path string) []int {
	t.Helper()
	_, out, _ := runBin(t, "cat", path, "--jsonl")
	var sizes []int
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Size int `json:"size"`
		}
		json.Unmarshal([]byte(l), &m)
		sizes = append(sizes, m.Size)
	}
	return sizes
}

// checkWithMCAPCoreCmd runs mcap/testdata/node/validate.mjs on path and
// checks one topic's counts, indexed and streaming; it skips when node or
// the npm packages are missing.
func checkWithMCAPCoreCmd(t *testing.T, path, topic string, messages, bytes int) {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "..", "mcap", "testdata", "node"))
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("needs node for the @mcap/core reference reader: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@mcap", "core")); err != nil {
		t.Skipf("needs `npm ci` in %s: %v", dir, err)
	}
	cmd := exec.Command("node", "validate.mjs", path)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node validate.mjs: %v", err)
	}
	type stat struct{ Messages, Bytes int }
	var res map[string]struct {
		Error            string
		DataSectionCrcOk bool `json:"dataSectionCrcOk"`
		Indexed          struct {
			Topics           map[string]stat
			DataSectionCrcOk bool `json:"dataSectionCrcOk"`
		}
		Stream struct{ Topics map[string]stat }
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("validate.mjs output: %v\n%s", err, out)
	}
	r := res[path]
	if r.Error != "" {
		t.Fatalf("@mcap/core rejects %s: %s", path, r.Error)
	}
	want := stat{messages, bytes}
	if r.Indexed.Topics[topic] != want || r.Stream.Topics[topic] != want || !r.Indexed.DataSectionCrcOk {
		t.Errorf("@mcap/core reads %s: indexed %+v (data CRC ok %v), stream %+v; want %+v", topic, r.Indexed.Topics[topic],
			r.Indexed.DataSectionCrcOk, r.Stream.Topics[topic], want)
	}
}

// hostileMP4s are MP4 files made to hurt a demuxer, each starting with an
// ftyp box (so it is detected as MP4).
func hostileMP4s() map[string][]byte {
	ftyp := box("ftyp", []byte("isom\x00\x00\x02\x00isomavc1"))
	huge := append(slices.Clone(ftyp), 0, 0, 0, 1, 'm', 'o', 'o', 'v')
	huge = binary.BigEndian.AppendUint64(huge, 1<<63-1) // a box claiming 2^63 bytes
	huge = append(huge, make([]byte, 64)...)
	// a sample table larger than the file: a valid file's stsz entry
	// count patched to 2^30
	table := validMP4()
	i := bytes.Index(table, []byte("stsz"))
	binary.BigEndian.PutUint32(table[i+12:], 1<<30)
	// a constant sample size of 2^31 for all its samples
	bigSample := validMP4()
	i = bytes.Index(bigSample, []byte("stsz"))
	binary.BigEndian.PutUint32(bigSample[i+8:], 1<<31)
	// boxes that do not advance: size 0 and size 4 inside moov
	loop := append(slices.Clone(ftyp), box("moov", append([]byte{0, 0, 0, 4, 'f', 'r', 'e', 'e'}, make([]byte, 16)...))...)
	zero := append(slices.Clone(ftyp), box("moov", append([]byte{0, 0, 0, 0, 'f', 'r', 'e', 'e'}, make([]byte, 16)...))...)
	return map[string][]byte{"huge.mp4": huge, "table.mp4": table, "bigsample.mp4": bigSample, "loop.mp4": loop, "zero.mp4": zero}
}

// validMP4 writes a small H.264 stream through media.MP4Writer.
func validMP4() []byte {
	sps, _ := hex.DecodeString("6764000aacd9447b0110000003001000000303c0f1225960")
	pps, _ := hex.DecodeString("68ebe3cb22c0")
	f, err := os.CreateTemp("", "edr-valid-*.mp4")
	if err != nil {
		panic(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	w, err := media.NewMP4Writer(f, media.CodecH264, media.MP4WriterOptions{})
	if err != nil {
		panic(err)
	}
	for i := range 8 {
		data := []byte{0, 0, 0, 1, 0x41, 0x9a, byte(i + 1), 0x55}
		if i == 0 {
			data = bytes.Join([][]byte{{}, sps, pps, {0x65, 0x88, 0x80, 0x40}}, []byte{0, 0, 0, 1})
		}
		s := media.Sample{PTSNs: 1e9 + int64(i)*40e6, DTSNs: 1e9 + int64(i)*40e6, Key: i == 0, Data: data}
		if err := w.Write(&s); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		panic(err)
	}
	return b
}

func box(typ string, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	return append(append(b, typ...), body...)
}

// TestMediaHostileMP4: hostile MP4s given to import, info, merge and cat
// are refused quickly with exit 1 and an error naming the file, the box
// and its offset, under a 4 GiB address-space limit (below every size
// the files claim).
func TestMediaHostileMP4(t *testing.T) {
	dir := t.TempDir()
	for name, b := range hostileMP4s() {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"import", "--format", "mp4", path, "-o", filepath.Join(dir, name+".pack")},
			{"info", path},
			{"merge", path, "-o", filepath.Join(dir, name+".merged.pack")},
			{"cat", path},
		} {
			// under a 4 GiB address-space limit (1 GiB makes the Go runtime
			// itself fail now and then): an allocation sized by
			// what the file claims would fail (or be killed), not pass
			cmd := exec.Command("sh", append([]string{"-c", `ulimit -v 4194304 && exec "$0" "$@"`, edrBinary(t)}, args...)...)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			begin := time.Now()
			err := cmd.Run()
			took := time.Since(begin)
			code := -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			msg := errb.String()
			if code != 1 || !strings.Contains(msg, path) || !strings.Contains(msg, "box ") || !strings.Contains(msg, "at offset ") {
				t.Errorf("%s %s: exit %d, %q; want exit 1 naming the file, box and offset", args[0], name, code, msg)
			}
			t.Logf("%s %s: %v: %s", args[0], name, took.Round(time.Millisecond), strings.TrimSpace(msg))
			if took > 20*time.Second { // not a speed gate: a hang
				t.Errorf("%s %s took %v", args[0], name, took)
			}
		}
	}
}
