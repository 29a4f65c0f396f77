package can

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// canUtils returns the path of a can-utils converter, or skips.
func canUtils(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (Debian: apt-get install can-utils; .ci/run installs it): %v", name, err)
	}
	return p
}

// crossLog is what both converters of the installed can-utils (2020.11 in
// Debian 12) carry: classic data and RTR frames of both ID widths, both
// directions, CAN FD with BRS and ESI. (asc2log 2020.11 drops classic DLCs
// above 8, reads an ASC ErrorFrame as a bare bus error, and takes the
// date line only in a de_DE or en_US locale: those are checked by
// TestASCRoundTrip against this package's own writer.)
const crossLog = `(1436509052.249713) can0 123#DEADBEEF R
(1436509052.249800) can0 12345678#DEADBEEF R
(1436509052.250000) can1 123#R4 R
(1436509052.250001) can1 7FF#R T
(1436509052.250002) can0 123##1112233445566778899AABBCC R
(1436509052.250003) can0 00000123##3 R
(1436509052.250004) can1 321#1122334455667788 T
(1436509053.000004) can0 000#R
(1436509054.500000) can1 0AB##2000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F R
`

// rel returns the records' times relative to the first: the ASC file's
// date holds whole seconds, so log2asc loses the start's fraction and
// asc2log's absolute times depend on its locale; the frames and their
// spacing are what both tools keep.
func rel(recs []Record) []int64 {
	var out []int64
	for _, r := range recs {
		out = append(out, r.TimeNs-recs[0].TimeNs)
	}
	return out
}

// TestCanUtilsCrossCheck: a candump log turned into ASC by this package
// reads back (asc2log) as the same frames, and log2asc's ASC of the log
// reads back (this package) as the same frames: frame for frame, with
// their spacing in microseconds.
func TestCanUtilsCrossCheck(t *testing.T) {
	log2asc, asc2log := canUtils(t, "log2asc"), canUtils(t, "asc2log")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.log")
	if err := os.WriteFile(in, []byte(crossLog), 0o644); err != nil {
		t.Fatal(err)
	}
	want := readLog(t, NewCandumpReader(strings.NewReader(crossLog)))

	// log2asc → our ASC reader.
	out, err := exec.Command(log2asc, "-I", in, "can0", "can1").Output()
	if err != nil {
		t.Fatalf("log2asc: %v", err)
	}
	got := readLog(t, NewASCReader(bytes.NewReader(out)))
	compare(t, "log2asc's ASC read by can.ASCReader", got, want)

	// our ASC writer → asc2log.
	var asc bytes.Buffer
	w, err := NewASCWriter(&asc, want[0].TimeNs, []string{"can0", "can1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range want {
		if err := w.Write(r.TimeNs, int(r.Bus[3]-'0')+1, &r.Frame); err != nil {
			t.Fatal(err)
		}
	}
	ascPath := filepath.Join(dir, "ours.asc")
	os.WriteFile(ascPath, asc.Bytes(), 0o644)
	back, err := exec.Command(asc2log, "-I", ascPath).Output()
	if err != nil {
		t.Fatalf("asc2log: %v", err)
	}
	got = readLog(t, NewCandumpReader(bytes.NewReader(back)))
	compare(t, "can.ASCWriter's ASC read by asc2log", got, want)
}

func compare(t *testing.T, what string, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d frames, want %d", what, len(got), len(want))
	}
	gr, wr := rel(got), rel(want)
	for i := range want {
		if got[i].Frame != want[i].Frame || string(got[i].Bus) != string(want[i].Bus) || gr[i] != wr[i] {
			t.Errorf("%s: frame %d: %s %s at +%d, want %s %s at +%d", what, i, got[i].Bus, AppendFrameText(nil, &got[i].Frame), gr[i],
				want[i].Bus, AppendFrameText(nil, &want[i].Frame), wr[i])
		}
	}
}
