package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// damagedDumps writes a typed pack dump of 200 messages of 20 KB in 250 ms
// frames (2 s: 8 frames) and returns it, a copy with one byte changed in the data
// of its fourth frame (holding n messages), and a copy with one byte
// changed in its first type section.
func damagedDumps(t *testing.T, dir string) (good, frame, typeSec string, n int) {
	t.Helper()
	good = filepath.Join(dir, "good.pack")
	w, err := pack.Create(good, pack.WriterOptions{Writer: "test", CreatedNs: t0})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetTopicType("vehicle/speed", "", ingest.Type{MessageEncoding: "json"}, t0); err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"v":12.5,"pad":"` + strings.Repeat("x", 20000) + `"}`) // 4 MB in all: MCAP chunks of 1 MiB
	for i := range 200 {
		ts := t0 + int64(i)*10e6
		if err := w.Add("vehicle/speed", "", nil, ts-1000, ts, payload); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(good)
	r, err := pack.NewBytesReader(good, b, pack.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	offs := r.FrameOffsets()
	ts, _ := r.Types()
	if len(offs) != 8 || len(ts) != 1 {
		t.Fatalf("%d frames, %d types", len(offs), len(ts))
	}
	var f pack.Frame
	r.SeekFrame(offs[3])
	r.ReadInto(&f)
	n = f.Len()
	d := bytes.Clone(b)
	d[offs[4]-3] ^= 0x10 // the fourth frame's data
	frame = filepath.Join(dir, "frame.pack")
	os.WriteFile(frame, d, 0o644)
	d = bytes.Clone(b)
	d[ts[0].Offset+pack.SectionHeaderSize+3] ^= 0x10
	typeSec = filepath.Join(dir, "type.pack")
	os.WriteFile(typeSec, d, 0o644)
	return good, frame, typeSec, n
}

// TestSkipDamaged (issue #31, item 5): cat and export stop at damage (exit
// 1, naming the offset and saying that --skip-damaged reads on); with
// --skip-damaged they skip the damaged frame (or type section, its topic
// then raw) and go on, warn on standard error what they skipped, and exit
// 0. Before, one changed byte in the type section hid all 200 messages
// from cat and export, and a damaged frame stopped them with no way past it.
func TestSkipDamaged(t *testing.T) {
	dir := t.TempDir()
	_, frame, typeSec, n := damagedDumps(t, dir)
	lines := func(s string) int { return strings.Count(s, "\n") }

	code, out, errs := runBin(t, "cat", frame)
	if code != exitFail || lines(out) != 3*200/8 || !strings.Contains(errs, "offset ") || !strings.Contains(errs, "--skip-damaged reads on past it") {
		t.Fatalf("cat of a damaged frame: exit %d, %d lines\n%s", code, lines(out), errs)
	}
	code, out, errs = runBin(t, "cat", "--skip-damaged", frame)
	if code != exitOK || lines(out) != 200-n || !strings.Contains(errs, "warning: "+frame+": skipped 1 damaged region(s) (1 frame(s), ") {
		t.Fatalf("cat --skip-damaged: exit %d, %d lines (want %d)\n%s", code, lines(out), 200-n, errs)
	}
	code, out, errs = runBinStdin(t, frame, "cat", "--skip-damaged", "-") // a stream: the frame's head checks out
	if code != exitOK || lines(out) != 200-n || !strings.Contains(errs, "skipped 1 damaged region(s) (1 frame(s), ") {
		t.Fatalf("cat --skip-damaged - : exit %d, %d lines (want %d)\n%s", code, lines(out), 200-n, errs)
	}
	code, out, errs = runBin(t, "cat", typeSec)
	if code != exitFail || lines(out) != 0 {
		t.Fatalf("cat of a damaged type section: exit %d, %d lines\n%s", code, lines(out), errs)
	}
	code, out, errs = runBin(t, "cat", "--skip-damaged", "--decode", typeSec)
	if code != exitOK || lines(out) != 200 || !strings.Contains(errs, "skipped 1 damaged region(s) (0 frame(s)") || !strings.Contains(out, `"raw"`) {
		t.Fatalf("cat --skip-damaged of a damaged type section: exit %d, %d lines\n%s", code, lines(out), errs)
	}

	for _, format := range []string{"jsonl", "mcap"} {
		o := filepath.Join(dir, "out."+format)
		if code, _, errs := runBin(t, "export", "--format", format, frame, "-o", o); code != exitFail || !strings.Contains(errs, "--skip-damaged") {
			t.Fatalf("export --format %s of a damaged frame: exit %d\n%s", format, code, errs)
		}
		os.Remove(o)
		code, _, errs := runBin(t, "export", "--format", format, "--skip-damaged", frame, "-o", o)
		if code != exitOK || !strings.Contains(errs, "skipped 1 damaged region(s) (1 frame(s)") {
			t.Fatalf("export --format %s --skip-damaged: exit %d\n%s", format, code, errs)
		}
		got := uint64(0)
		if format == "jsonl" {
			b, _ := os.ReadFile(o)
			got = uint64(lines(string(b)) - 1) // the header line
		} else {
			got = readInfoJSON(t, o).Messages
		}
		if got != uint64(200-n) {
			t.Errorf("export --format %s --skip-damaged: %d messages, want %d", format, got, 200-n)
		}
	}

	// An MCAP file with a damaged chunk: read through a salvaged copy.
	m := filepath.Join(dir, "good.mcap")
	mustCLI(t, "export", "--format", "mcap", filepath.Join(dir, "good.pack"), "-o", m)
	b, _ := os.ReadFile(m)
	b[len(b)/3] ^= 0x10
	dm := filepath.Join(dir, "damaged.mcap")
	os.WriteFile(dm, b, 0o644)
	if code, _, errs := runBin(t, "cat", dm); code != exitFail || !strings.Contains(errs, "--skip-damaged") {
		t.Fatalf("cat of a damaged MCAP file: exit %d\n%s", code, errs)
	}
	code, out, errs = runBin(t, "cat", "--skip-damaged", dm)
	if code != exitOK || lines(out) == 0 || lines(out) >= 200 || !strings.Contains(errs, "warning: "+dm+": skipped what its damage hides") {
		t.Fatalf("cat --skip-damaged of a damaged MCAP file: exit %d, %d lines\n%s", code, lines(out), errs)
	}
}
