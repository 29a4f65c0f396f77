package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The camera files that are damaged or not what Foxglove plays (issue 31
// items 10-13), through the built binary: MP4s and JPEGs cut short, video
// with B-frames written to MCAP, MP4s without a creation time.

// ffMP4 has ffmpeg encode n frames of test picture at 30 fps as H.264 with
// the x264 options given (x264's defaults have B-frames) into path.
func ffMP4(t *testing.T, path string, n int, extra ...string) {
	t.Helper()
	args := append([]string{"-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-frames:v", strconv.Itoa(n),
		"-c:v", "libx264", "-pix_fmt", "yuv420p"}, extra...)
	if out, err := exec.Command("ffmpeg", append(args, path)...).CombinedOutput(); err != nil {
		t.Skipf("ffmpeg cannot make an H.264 MP4 (libx264?): %v\n%s", err, out)
	}
}

// ffPacket is one video packet as ffprobe lists it, times in ns.
type ffPacket struct {
	pts, dts  int64
	size, pos int
}

// ffprobeNs lists an MP4's video packets (times in ns of the movie,
// exact: from ffprobe's integer times and the stream's time base).
func ffprobeNs(t *testing.T, path string) []ffPacket {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
		"stream=time_base:packet=pts,dts,size,pos", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p struct {
		Streams []struct {
			TimeBase string `json:"time_base"`
		} `json:"streams"`
		Packets []struct {
			PTS, DTS  int64
			Size, Pos string
		} `json:"packets"`
	}
	if err := json.Unmarshal(out, &p); err != nil || len(p.Streams) != 1 {
		t.Fatalf("ffprobe %s: %v %s", path, err, out)
	}
	var num, den int64
	if _, err := fmt.Sscanf(p.Streams[0].TimeBase, "%d/%d", &num, &den); err != nil || den == 0 {
		t.Fatalf("time base %q", p.Streams[0].TimeBase)
	}
	ns := func(v int64) int64 { // v*num/den s in ns, rounded to nearest
		x := new(big.Int).Mul(big.NewInt(v*num), big.NewInt(1e9))
		q, r := new(big.Int).QuoRem(x, big.NewInt(den), new(big.Int))
		if 2*abs64(r.Int64()) >= den {
			if x.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
		return q.Int64()
	}
	var pk []ffPacket
	for _, x := range p.Packets {
		size, _ := strconv.Atoi(x.Size)
		pos, _ := strconv.Atoi(x.Pos)
		pk = append(pk, ffPacket{pts: ns(x.PTS), dts: ns(x.DTS), size: size, pos: pos})
	}
	return pk
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// camTimes reads a dump's messages: capture and producer times.
func camTimes(t *testing.T, path string) (ts, gen []int64) {
	t.Helper()
	code, out, errs := runBin(t, "cat", path, "--jsonl", "--payload", "none")
	if code != 0 {
		t.Fatalf("cat %s: %d %s", path, code, errs)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Ts    int64 `json:"ts"`
			GenTs int64 `json:"gen_ts"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("cat line %q: %v", l, err)
		}
		ts, gen = append(ts, m.Ts), append(gen, m.GenTs)
	}
	return ts, gen
}

// TestMediaMP4Cut (issue 31 item 10): a faststart MP4 whose mdat is cut
// and a fragmented one cut inside a fragment are imported with every
// sample wholly before the cut (ffprobe's packets of the whole file that
// end before it: as many as ffprobe lists for the cut file, less the one
// it reads partly), at their times, with a warning naming the file, the
// offset and the samples lost; --strict refuses them and writes nothing;
// info and merge name the damage; recover writes an MP4 that ffprobe lists
// with the same packets. Before, each was refused whole (exit 1) and
// recover refused camera files.
func TestMediaMP4Cut(t *testing.T) {
	needFF(t)
	const start = "2026-12-02T13:32:22Z"
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"faststart", []string{"-bf", "2", "-g", "15", "-movflags", "+faststart", "-metadata", "creation_time=" + start}},
		{"fragmented", []string{"-bf", "2", "-g", "15", "-movflags", "frag_keyframe+empty_moov", "-metadata", "creation_time=" + start}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			whole := filepath.Join(dir, "whole.mp4")
			ffMP4(t, whole, 150, c.flags...)
			b, err := os.ReadFile(whole)
			if err != nil {
				t.Fatal(err)
			}
			all := ffprobeNs(t, whole)
			cutAt := len(b) / 2
			in := filepath.Join(dir, "front.mp4")
			if err := os.WriteFile(in, b[:cutAt], 0o644); err != nil {
				t.Fatal(err)
			}
			want := 0 // the packets wholly before the cut
			for want < len(all) && all[want].pos+all[want].size <= cutAt {
				want++
			}
			if n := len(ffprobeNs(t, in)); n != want && n != want+1 || want < 30 || want > 120 {
				t.Fatalf("ffprobe lists %d packets of the cut file; %d end before the cut", n, want)
			}
			pk := filepath.Join(dir, "front.pack")
			code, out, errs := runBin(t, "import", "--format", "mp4", in, "-o", pk)
			if code != 0 {
				t.Fatalf("import of the cut file: exit %d\n%s", code, errs)
			}
			if !strings.Contains(errs, "edr-lite import: warning: "+in+": cut short: its "+strconv.Itoa(cutAt)+" bytes end ") ||
				!strings.Contains(errs, fmt.Sprintf("; %d samples read", want)) || !strings.Contains(errs, fmt.Sprintf("lost from offset %d on", all[want].pos)) {
				t.Errorf("the warning does not name the file, the cut and what was lost:\n%s", errs)
			}
			if !strings.Contains(out, fmt.Sprintf(", %d messages,", want)) || !strings.Contains(out, "; cut short: ") {
				t.Errorf("summary: %s", out)
			}
			if c.name == "faststart" && !strings.Contains(out, fmt.Sprintf("cut short: %d of %d samples lost", len(all)-want, len(all))) {
				t.Errorf("summary does not count the samples lost: %s", out)
			}
			ts, gen := camTimes(t, pk)
			t0 := mediaT0 // the creation time, 13:32:22Z
			if len(ts) != want {
				t.Fatalf("%d messages imported, want %d", len(ts), want)
			}
			for i := range ts {
				if ts[i] != t0+all[i].dts || gen[i] != t0+all[i].pts {
					t.Fatalf("message %d at %d (presented %d); ffprobe: dts %d pts %d from %d", i, ts[i], gen[i], all[i].dts, all[i].pts, t0)
				}
			}
			// --strict: refused, nothing written
			strictOut := filepath.Join(dir, "strict.pack")
			code, _, errs = runBin(t, "import", "--format", "mp4", in, "-o", strictOut, "--strict")
			if _, err := os.Stat(strictOut); code != 1 || err == nil || !strings.Contains(errs, "--strict: "+in+" is damaged (cut short: ") {
				t.Errorf("--strict: exit %d, output left: %v\n%s", code, err == nil, errs)
			}
			// info and merge of the MP4 as it is name the damage
			code, out, _ = runBin(t, "info", in)
			if code != 0 || !strings.Contains(out, "damaged:    "+in+": cut short: ") || !strings.Contains(out, fmt.Sprintf("messages:   %d ", want)) {
				t.Errorf("info: %d\n%s", code, out)
			}
			code, _, errs = runBin(t, "merge", in, "-o", filepath.Join(dir, "merged.pack"))
			if code != 0 || !strings.Contains(errs, "edr-lite merge: warning: "+in+": cut short: ") {
				t.Errorf("merge: %d\n%s", code, errs)
			}
			// recover: an MP4 of the samples before the cut, as ffprobe sees them
			rec := filepath.Join(dir, "recovered.mp4")
			code, out, errs = runBin(t, "recover", in, "-o", rec)
			if code != 0 || !strings.Contains(out, fmt.Sprintf("salvaged %d samples of the video track", want)) ||
				!strings.Contains(out, "cut short: ") {
				t.Fatalf("recover: %d\n%s%s", code, out, errs)
			}
			got := ffprobeNs(t, rec)
			if len(got) != want {
				t.Fatalf("recovered: ffprobe lists %d packets, want %d", len(got), want)
			}
			for i := range got {
				if got[i].pts != all[i].pts || got[i].dts != all[i].dts || got[i].size != all[i].size {
					t.Fatalf("recovered packet %d: %+v, the whole file's %+v", i, got[i], all[i])
				}
			}
			if code, _, errs := runBin(t, "recover", in, "-o", filepath.Join(dir, "x.pack")); code != 2 || !strings.Contains(errs, "name the output .mp4") {
				t.Errorf("recover to .pack: %d %s", code, errs)
			}
		})
	}
}

// bigJPEG encodes a 320x240 noisy picture (tens of KiB) that differs
// with seed.
func bigJPEG(t *testing.T, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	img := image.NewRGBA(image.Rect(0, 0, 320, 240))
	for y := range 240 {
		for x := range 320 {
			img.Set(x, y, color.RGBA{uint8(x + rng.IntN(64)), uint8(y + rng.IntN(64)), uint8(rng.IntN(256)), 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestMediaJPEGCut (issue 31 item 11): a JPEG cut to 3 KB with an intact
// header is imported as it is with a warning naming it, one cut before
// its image data is skipped with a warning; import counts both in its
// summary and --strict refuses the folder; info, merge and cat of the
// folder name them too. Before, the 3 KB file was imported with no word.
func TestMediaJPEGCut(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "front")
	os.Mkdir(in, 0o755)
	var names []string
	for i := range 4 {
		names = append(names, fmt.Sprintf("%019d.jpg", mediaT0+int64(i)*33_333_333))
		b := bigJPEG(t, uint64(i))
		switch i {
		case 1:
			b = b[:3000] // the header and the top of the picture
		case 2:
			b = b[:400] // the header only
		}
		if err := os.WriteFile(filepath.Join(in, names[i]), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cutName, emptyName := filepath.Join(in, names[1]), filepath.Join(in, names[2])
	pk := filepath.Join(dir, "front.pack")
	code, out, errs := runBin(t, "import", "--format", "jpeg-dir", in, "-o", pk)
	if code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	if !strings.Contains(errs, "edr-lite import: warning: "+cutName+": JPEG cut short: no end-of-image marker: the file's 3000 bytes end after the image data; read as it is") ||
		!strings.Contains(errs, "edr-lite import: warning: "+emptyName+": JPEG cut short: the file's 400 bytes end") {
		t.Errorf("warnings:\n%s", errs)
	}
	if !strings.Contains(out, ", 3 messages,") || !strings.Contains(out, "; 1 JPEG cut short, read as it is; 1 JPEG without image data, skipped") {
		t.Errorf("summary: %s", out)
	}
	if ts, _ := camTimes(t, pk); len(ts) != 3 || ts[1] != mediaT0+33_333_333 {
		t.Errorf("imported %v", ts)
	}
	code, _, errs = runBin(t, "import", "--format", "jpeg-dir", in, "-o", filepath.Join(dir, "strict.pack"), "--strict")
	if code != 1 || !strings.Contains(errs, "--strict: "+in+" is damaged (1 JPEG cut short, read as it is; 1 JPEG without image data, skipped): nothing written") {
		t.Errorf("--strict: %d %s", code, errs)
	}
	code, out, _ = runBin(t, "info", in)
	if code != 0 || strings.Count(out, "damaged:    "+in) != 2 {
		t.Errorf("info: %d\n%s", code, out)
	}
	for _, args := range [][]string{{"merge", in, "-o", filepath.Join(dir, "m.pack")}, {"cat", in}} {
		code, _, errs := runBin(t, args...)
		if code != 0 || !strings.Contains(errs, "warning: "+cutName+": JPEG cut short") || !strings.Contains(errs, "warning: "+emptyName+": JPEG cut short") {
			t.Errorf("%s: %d\n%s", args[0], code, errs)
		}
	}
}

// TestMediaBFramesMCAP (issue 31 item 12): H.264 with B-frames (x264's
// defaults) written to MCAP (import -o .mcap, export --format mcap of its
// pack import, merge -o .mcap) warns that Foxglove cannot play it; the
// same video made with -bf 0 does not. Before, no verb said a word.
func TestMediaBFramesMCAP(t *testing.T) {
	needFF(t)
	dir := t.TempDir()
	for _, bf := range []bool{true, false} {
		name := map[bool]string{true: "bframes", false: "nobframes"}[bf]
		in := filepath.Join(dir, name+".mp4")
		var flags []string
		if !bf {
			flags = []string{"-bf", "0"}
		}
		ffMP4(t, in, 60, flags...)
		warn := "warning: camera/" + name + ": foxglove.CompressedVideo with B-frames"
		check := func(what string, code int, out, errs string) {
			t.Helper()
			if code != 0 {
				t.Fatalf("%s: %d %s", what, code, errs)
			}
			if strings.Contains(errs, warn) != bf || strings.Contains(errs, "Foxglove cannot play it") != bf {
				t.Errorf("%s of %s: B-frames %v; stderr:\n%s", what, name, bf, errs)
			}
		}
		mc := filepath.Join(dir, name+".mcap")
		code, out, errs := runBin(t, "import", "--format", "mp4", in, "--start", "2026-12-02T13:32:22Z", "-o", mc)
		check("import -o .mcap", code, out, errs)
		if strings.Contains(out, "B-frames") != bf {
			t.Errorf("import summary: %s", out)
		}
		pk := filepath.Join(dir, name+".pack")
		code, out, errs = runBin(t, "import", "--format", "mp4", in, "--start", "2026-12-02T13:32:22Z", "-o", pk)
		if code != 0 || strings.Contains(errs, warn) || strings.Contains(out, "B-frames (Foxglove cannot play them)") != bf {
			t.Errorf("import to pack: %d %s%s", code, out, errs)
		}
		code, out, errs = runBin(t, "export", "--format", "mcap", pk, "-o", filepath.Join(dir, name+"-export.mcap"))
		check("export --format mcap", code, out, errs)
		code, out, errs = runBin(t, "export", "--format", "mcap", "--from", "0.5s", pk, "-o", filepath.Join(dir, name+"-cut.mcap"))
		check("export --format mcap --from", code, out, errs)
		code, out, errs = runBin(t, "merge", pk, mc, "-o", filepath.Join(dir, name+"-merged.mcap"))
		if bf && strings.Count(errs, warn) != 1 {
			t.Errorf("merge of two copies of one topic: %d warnings\n%s", strings.Count(errs, warn), errs)
		}
		check("merge -o .mcap", code, out, errs)
	}
}

// TestMediaMP4NoStart (issue 31 item 13): an MP4 from ffmpeg carries
// creation time 0: import without --start is refused with a hint (before,
// it went to 1970 and the frame decoded at 0 took its presentation time);
// --start T gives each frame its decode time from T (the frame with dts 0
// at T exactly); --start mtime ends its last frame at the file's
// modification time; a --start putting a frame at or before 1970 is
// refused.
func TestMediaMP4NoStart(t *testing.T) {
	needFF(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "drive.mp4")
	ffMP4(t, in, 30, "-bf", "2", "-g", "15")
	pk := ffprobeNs(t, in)
	for _, args := range [][]string{
		{"import", "--format", "mp4", in, "-o", filepath.Join(dir, "a.pack")},
		{"info", in},
		{"merge", in, "-o", filepath.Join(dir, "m.pack")},
	} {
		code, _, errs := runBin(t, args...)
		if code != 1 || !strings.Contains(errs, in+": no creation time (its mvhd box says 0") ||
			!strings.Contains(errs, "--start T") || !strings.Contains(errs, "--start mtime") {
			t.Errorf("%s without --start: %d\n%s", args[0], code, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a.pack")); err == nil {
		t.Error("the refused import left a file")
	}
	// --start T: decode times from T, the frame at dts 0 at T
	const T = mediaT0
	out := filepath.Join(dir, "t.pack")
	if code, _, errs := runBin(t, "import", "--format", "mp4", in, "--start", strconv.FormatInt(T, 10), "-o", out); code != 0 {
		t.Fatalf("import --start: %d %s", code, errs)
	}
	ts, gen := camTimes(t, out)
	zero := -1
	for i := range pk {
		if ts[i] != T+pk[i].dts || gen[i] != T+pk[i].pts {
			t.Fatalf("message %d at %d presented %d; ffprobe dts %d pts %d", i, ts[i], gen[i], pk[i].dts, pk[i].pts)
		}
		if pk[i].dts == 0 {
			zero = i
		}
	}
	if zero < 0 || pk[zero].pts == 0 || ts[zero] != T {
		t.Fatalf("no frame with dts 0 and pts > 0 to check (%d)", zero)
	}
	// --start mtime: the last frame ends at the modification time
	mt := time.Unix(0, mediaT0+5e9).UTC()
	if err := os.Chtimes(in, mt, mt); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(dir, "mtime.pack")
	code, _, errs := runBin(t, "import", "--format", "mp4", in, "--start", "mtime", "-o", out)
	if code != 0 {
		t.Fatalf("import --start mtime: %d %s", code, errs)
	}
	var endRel int64
	for _, p := range pk {
		endRel = max(endRel, p.pts+33_333_333) // every frame lasts 1/30 s
	}
	start := mt.UnixNano() - endRel
	if !strings.Contains(errs, "--start mtime: the movie starts at "+fmtTime(start)) {
		t.Errorf("--start mtime does not say what it chose:\n%s", errs)
	}
	if ts, gen := camTimes(t, out); ts[0] != start+pk[0].dts || gen[len(gen)-1] != start+pk[len(pk)-1].pts {
		t.Errorf("--start mtime: first at %d, want %d", ts[0], start+pk[0].dts)
	}
	// --start 0 puts the first frames (decoded before the movie starts) before 1970
	code, _, errs = runBin(t, "import", "--format", "mp4", in, "--start", "0", "-o", filepath.Join(dir, "zero.pack"))
	if code != 1 || !strings.Contains(errs, "not after 1970-01-01") {
		t.Errorf("--start 0: %d %s", code, errs)
	}
	if code, _, errs := runBin(t, "import", "--format", "jpeg-dir", dir, "--start", "mtime", "-o", filepath.Join(dir, "j.pack")); code != 2 ||
		!strings.Contains(errs, "--start mtime is for --format mp4") {
		t.Errorf("jpeg-dir --start mtime: %d %s", code, errs)
	}
}
