package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/internal/demodump"
	"github.com/edr-lite/edr-lite/pack"
)

// TestE2EInfoDamaged: info of a pack dump cut in the middle of a frame
// (whatever the frame size) names the damage — where, and what could not
// be read — on standard error and in its output, and exits 1 as verify
// does, with --json too; the intact file exits 0.
func TestE2EInfoDamaged(t *testing.T) {
	dir := t.TempDir()
	whole := filepath.Join(dir, "demo.pack")
	if err := demodump.WritePack(whole); err != nil {
		t.Fatal(err)
	}
	r, err := pack.Open(whole)
	if err != nil {
		t.Fatal(err)
	}
	offs := r.FrameOffsets()
	r.Close()
	b, _ := os.ReadFile(whole)
	at := int64(len(b) / 2)
	for _, o := range offs {
		if o == at || o+1 == at { // never at a frame's start: inside it
			at += 2
		}
	}
	cut := filepath.Join(dir, "cut.pack")
	os.WriteFile(cut, b[:at], 0o644)

	if code, _, errs := runBin(t, "info", whole); code != 0 {
		t.Fatalf("intact file: exit %d %s", code, errs)
	}
	code, out, errs := runBin(t, "info", cut)
	offset := regexp.MustCompile(`offset (\d+): `)
	if code != exitFail || !strings.Contains(errs, "cut.pack is damaged") || !offset.MatchString(errs) ||
		!strings.Contains(errs, "could not be read") || !strings.Contains(out, "damaged:    offset ") {
		t.Errorf("info of a cut file: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if strings.Contains(out, "triggers:   none recorded") {
		t.Errorf("a cut file's lost dump information shown as 'none recorded':\n%s", out)
	}
	code, out, _ = runBin(t, "info", "--json", cut)
	var in struct {
		Damage *struct {
			Offset    int64 `json:"offset"`
			LostBytes int64 `json:"lost_bytes"`
			Truncated bool  `json:"truncated"`
		} `json:"damage"`
	}
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("info --json: %v\n%s", err, out)
	}
	if code != exitFail || in.Damage == nil || in.Damage.Offset <= 0 || in.Damage.Offset > at || in.Damage.LostBytes != at-in.Damage.Offset ||
		!in.Damage.Truncated {
		t.Errorf("info --json of a cut file: exit %d, damage %+v (cut at %d)", code, in.Damage, at)
	}
}

// TestE2EMCAPFooterPastEnd: an MCAP file whose footer's summary_start puts
// the DataEnd record past the file's end (fuzz crasher 0035349613e7b09a,
// with MCAP's magic in front) is damaged for info and verify: exit 1, the
// file and an offset named, and never a bare "EOF" from the seal's lookup
// nor "ends before its footer" (it ends with one: its Header is missing).
func TestE2EMCAPFooterPastEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "short.mcap")
	b := []byte("\x89MCAP0\r\n\x02\x14\x00\x00\x00\x00\x00\x00\x002\x00\x00\x00\x00\x00\x00\x00000000000000\x89MCAP0\r\n")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"info", "verify"} {
		code, out, errs := runBin(t, verb, path)
		if code != exitFail || !strings.Contains(out+errs, "short.mcap") || !strings.Contains(out+errs, "offset 8:") ||
			strings.Contains(errs, "EOF") || strings.Contains(out+errs, "ends before its footer") {
			t.Errorf("%s: exit %d\nstdout %s\nstderr %s", verb, code, out, errs)
		}
	}
}
