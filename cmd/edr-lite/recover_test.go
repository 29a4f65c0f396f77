package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/pack"
)

// TestTruncatedMCAP: info and merge read what a cut MCAP file holds and
// say so, instead of failing; recover makes a file that verifies with
// every message info counted.
func TestTruncatedMCAP(t *testing.T) {
	dir := t.TempDir()
	p := writeTestDump(t, dir, "a.pack")
	m := filepath.Join(dir, "a.mcap")
	mustCLI(t, "export", "--format", "mcap", p, "-o", m) // one uncompressed chunk: the cut falls inside it
	b, _ := os.ReadFile(m)
	cut := filepath.Join(dir, "cut.mcap")
	os.WriteFile(cut, b[:len(b)/3], 0o644)

	code, out, errs := runCLI(t, "info", cut)
	if code != exitFail || !strings.Contains(out, "damaged:    offset ") || !strings.Contains(out, "edr-lite recover") ||
		!strings.Contains(errs, "cut.mcap is damaged: offset ") {
		t.Fatalf("info of a cut MCAP: code %d\n%s%s", code, out, errs)
	}
	checkGolden(t, "info-cut-mcap.txt", scrubDir(out, dir))
	code, js, _ := runBin(t, "info", "--json", cut)
	var in infoJSON
	if err := json.Unmarshal([]byte(js), &in); code != exitFail || err != nil {
		t.Fatalf("info --json of a cut MCAP: code %d, %v\n%s", code, err, js)
	}
	if in.Messages == 0 || in.Messages >= 110 {
		t.Errorf("info --json of the cut file counts %d messages", in.Messages)
	}

	merged := filepath.Join(dir, "m.pack")
	code, out, errs = runBin(t, "merge", cut, p, "-o", merged)
	if code != 0 || !strings.Contains(errs, "warning: "+cut+" cannot be read as it is") {
		t.Fatalf("merge with a cut MCAP: code %d\n%s%s", code, out, errs)
	}
	if code, out, _ := runCLI(t, "verify", merged); code != exitOK {
		t.Fatalf("merged file does not verify: %s", out)
	}
	if got := readInfoJSON(t, merged); got.Messages != 110+in.Messages {
		t.Errorf("merged %d messages, want 110 + %d", got.Messages, in.Messages)
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "edr-lite-salvage-*")); len(left) != 0 {
		t.Errorf("salvaged copies left behind: %v", left)
	}

	rec := filepath.Join(dir, "rec.mcap")
	code, out, errs = runCLI(t, "recover", cut, "-o", rec)
	if code != exitOK {
		t.Fatalf("recover: %d %s%s", code, out, errs)
	}
	checkGolden(t, "recover-mcap.txt", scrubDir(out, dir))
	if code, out, _ := runCLI(t, "verify", rec); code != exitOK {
		t.Fatalf("recovered file does not verify: %s", out)
	}
	if got := readInfoJSON(t, rec); got.Messages != in.Messages {
		t.Errorf("recovered %d messages, info said %d", got.Messages, in.Messages)
	}
}

// TestVerifyStrict: verify --strict passes our dumps and exports, and
// reports, with exit 1, a recovered pack dump whose dump information still
// counts the messages lost, and an MCAP file whose statistics disagree
// with its data (its CRC rewritten, so only conformance catches it).
func TestVerifyStrict(t *testing.T) {
	dir := t.TempDir()
	p := writeTestDump(t, dir, "a.pack")
	m := filepath.Join(dir, "a.mcap")
	mustCLI(t, "export", "--format", "mcap", p, "-o", m, "--compression", "zstd")
	code, out, errs := runCLI(t, "verify", "--strict", p, m)
	if code != exitOK || strings.Count(out, ": ok, conformant, ") != 2 {
		t.Fatalf("verify --strict: code %d\n%s%s", code, out, errs)
	}
	// a dump whose information counts messages the file does not hold (a
	// writer that lost some)
	rec := filepath.Join(dir, "stale.pack")
	w, err := pack.Create(rec, pack.WriterOptions{Writer: "test", CreatedNs: t0})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		w.Add("vehicle/speed", "", nil, 0, t0+int64(i)*1e6, []byte{1, 2, 3, 4})
	}
	w.SetDumpInfo(dumpinfo.Info{StartNs: t0, EndNs: t0 + 1e9,
		Topics: []dumpinfo.TopicAccount{{Topic: "vehicle/speed", Messages: 5, Bytes: 20}}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI(t, "verify", rec); code != exitOK {
		t.Fatalf("the stale dump must verify: %s", out)
	}
	code, out, _ = runCLI(t, "verify", "--strict", rec)
	if code != exitFail || !strings.Contains(out, "dump info: topic vehicle/speed: 5 messages, 20 bytes; the file holds 3, 12") {
		t.Fatalf("verify --strict of a stale dump: code %d\n%s", code, out)
	}
	checkGolden(t, "verify-strict.txt", scrubDir(out, dir))

	// an MCAP file whose Statistics miscount, its summary CRC made right
	mb, _ := os.ReadFile(m)
	bad := filepath.Join(dir, "stats.mcap")
	os.WriteFile(bad, miscount(t, mb), 0o644)
	if code, out, _ := runCLI(t, "verify", bad); code != exitOK {
		t.Fatalf("the edited MCAP must still verify: %s", out)
	}
	code, out, _ = runCLI(t, "verify", "--strict", bad)
	if code != exitFail || !strings.Contains(out, "Statistics.metadata_count") {
		t.Fatalf("verify --strict of miscounting statistics: code %d\n%s", code, out)
	}
	checkGolden(t, "verify-strict-mcap.txt", scrubDir(out, dir))
}

// TestVerifySuggestsOnlyWhatWorks (issue #32, item 11): verify suggests
// recover only for a file recover salvages something of. A pack file cut
// inside its 64-byte header, or right after it, and an MCAP file cut
// inside its magic get "nothing can be salvaged" (recover then keeps
// nothing); a file cut after its first frame gets the suggestion, and
// recover then keeps that frame.
func TestVerifySuggestsOnlyWhatWorks(t *testing.T) {
	dir := t.TempDir()
	p := writeTestDump(t, dir, "a.pack")
	b, _ := os.ReadFile(p)
	m := filepath.Join(dir, "a.mcap")
	mustCLI(t, "export", "--format", "mcap", p, "-o", m)
	mb, _ := os.ReadFile(m)
	r, err := pack.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	offs := r.FrameOffsets()
	r.Close()
	for _, tc := range []struct {
		name    string
		data    []byte
		salvage bool
	}{
		{"header40.pack", b[:40], false},
		{"header64.pack", b[:pack.HeaderSize], false},
		{"frame1.pack", b[:offs[1]+10], true},
		{"magic5.mcap", mb[:5], false},
		{"half.mcap", mb[:len(mb)/2], true},
	} {
		cut := filepath.Join(dir, tc.name)
		os.WriteFile(cut, tc.data, 0o644)
		code, out, errs := runBin(t, "verify", cut)
		if code != exitFail {
			t.Errorf("%s: verify exit %d\n%s%s", tc.name, code, out, errs)
		}
		suggests := strings.Contains(out, "edr-lite recover "+cut)
		nothing := strings.Contains(out, "nothing can be salvaged")
		if suggests != tc.salvage || nothing == tc.salvage {
			t.Errorf("%s: verify says\n%s(want a suggestion to recover: %v)", tc.name, out, tc.salvage)
		}
		rcode, rout, rerrs := runBin(t, "recover", cut, "-o", filepath.Join(dir, "rec-"+tc.name))
		kept := rcode == exitOK && !strings.Contains(rout, "salvaged 0 frames, 0 messages, 0 metadata") &&
			!strings.Contains(rout, "salvaged 0 chunks, 0 messages, 0 metadata")
		if kept != tc.salvage {
			t.Errorf("%s: verify's advice (salvage: %v) disagrees with recover: exit %d\n%s%s", tc.name, tc.salvage, rcode, rout, rerrs)
		}
	}
}

// TestDemoDumpDamageStaysLocal (issue #31, item 1): the recorder's frames
// are bounded by time (250 ms) as well as by size by default, so the demo
// dump (about 0.6 MB, one frame before) is cut into frames: cut in its
// middle, recover salvages every frame before the cut; a byte changed in
// its middle costs one frame. Before, both lost every message.
func TestDemoDumpDamageStaysLocal(t *testing.T) {
	dir := t.TempDir()
	if code, out, errs := runBin(t, "demo", "--dir", filepath.Join(dir, "demo"), "--duration", "4s"); code != 0 {
		t.Fatalf("demo: %d\n%s%s", code, out, errs)
	}
	dumps, _ := filepath.Glob(filepath.Join(dir, "demo", "*.pack"))
	if len(dumps) != 1 {
		t.Fatalf("demo wrote %v", dumps)
	}
	b, err := os.ReadFile(dumps[0])
	if err != nil {
		t.Fatal(err)
	}
	r, err := pack.NewBytesReader("demo.pack", b, pack.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ off, end, msgs int64 }
	var frames []span
	var f pack.Frame
	total := int64(0)
	for r.ReadMetaInto(&f) == nil {
		first, last := int64(1<<62), int64(0)
		for i := range f.Len() {
			m := f.Message(i)
			first, last = min(first, m.DoneTs), max(last, m.DoneTs)
		}
		if last-first >= int64(250*time.Millisecond) {
			t.Errorf("frame at %d spans %v", r.FrameOffset(), time.Duration(last-first))
		}
		frames = append(frames, span{r.FrameOffset(), r.Tell(), int64(f.Len())})
		total += int64(f.Len())
	}
	if len(frames) < 10 {
		t.Fatalf("the 4 s demo dump is %d frames", len(frames))
	}
	cut := int64(len(b) / 2)
	var before, most int64
	for _, fr := range frames {
		if fr.end <= cut {
			before += fr.msgs
		}
		most = max(most, fr.msgs)
	}
	os.WriteFile(filepath.Join(dir, "cut.pack"), b[:cut], 0o644)
	code, out, errs := runBin(t, "recover", filepath.Join(dir, "cut.pack"), "-o", filepath.Join(dir, "cut-rec.pack"))
	if code != 0 || !strings.Contains(out, fmt.Sprintf(", %d messages,", before)) {
		t.Fatalf("recover of the demo dump cut at %d of %d bytes: exit %d, want the %d messages of the frames before the cut\n%s%s", cut, len(b), code, before, out, errs)
	}
	flip := bytes.Clone(b)
	flip[cut] ^= 0x10
	os.WriteFile(filepath.Join(dir, "flip.pack"), flip, 0o644)
	code, out, errs = runBin(t, "recover", filepath.Join(dir, "flip.pack"), "-o", filepath.Join(dir, "flip-rec.pack"))
	var got int64
	if i := strings.Index(out, "frames, "); i >= 0 {
		fmt.Sscanf(out[i+len("frames, "):], "%d", &got)
	}
	if code != 0 || got < total-most || !strings.Contains(out, "lost 1 frame,") {
		t.Fatalf("recover of the demo dump with a byte changed: exit %d, %d of %d messages salvaged (want all but one frame's, at most %d)\n%s%s", code, got, total, most, out, errs)
	}
}
