package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// ownCmd is the type the recording of TestReplayUsesRecordedTypes gives
// planner/brake: the example node's layout under a name of the user's.
var ownCmd = ingest.Packed("own.Cmd", "f32le speed (m/s); f32le obstacle (m); f32le command; u8 brake")

// brakeAnswer is what examples/brake-node answers to speed v with its
// defaults (threshold 18 m/s, gain 0.01, no obstacle), its command moved
// by dcmd.
func brakeAnswer(v, dcmd float32) []byte {
	vv, tt := v*v, float32(18*18)
	cmd := max(0, min(1, (vv-tt)*float32(0.01))) + dcmd
	b := binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(math.NaN())))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(cmd))
	if cmd > 0 {
		return append(b, 1)
	}
	return append(b, 0)
}

// writeOwnTypeDump writes 20 speed samples (20 m/s) and the node's answers
// typed ownCmd, their command 0.001 off what the node computes.
func writeOwnTypeDump(t *testing.T, dir string) string {
	t.Helper()
	return writeOwnTypeDumpN(t, dir, 20)
}

// writeOwnTypeDumpN is writeOwnTypeDump with n samples, 10 ms apart.
func writeOwnTypeDumpN(t *testing.T, dir string, n int) string {
	t.Helper()
	p := filepath.Join(dir, fmt.Sprintf("own%d.pack", n))
	w, err := pack.Create(p, pack.WriterOptions{Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	w.SetTopicType("vehicle/speed", "", ingest.Packed("own.Speed", "f32le speed (m/s)"), t0)
	w.SetTopicType("planner/brake", "", ownCmd, t0)
	for i := range n {
		ts := t0 + int64(i)*10e6
		if err := w.Add("vehicle/speed", "", nil, ts, ts, binary.LittleEndian.AppendUint32(nil, math.Float32bits(20))); err != nil {
			t.Fatal(err)
		}
		if err := w.Add("planner/brake", "", nil, ts, ts+1e5, brakeAnswer(20, 0.001)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReplayUsesRecordedTypes is issue 30 item 14 through the binary: the
// closed loop uses the layout the dump records for an output (own.Cmd,
// which "list schemas" shows): a tolerance check needs no --schema (before:
// "the dump gives none for type x-edr-packed own.Cmd"), an exact check
// names the differing field (before: bytes[8]), and --record keeps the
// output's recorded type when the node declares none of its own (a name
// over UDP; before: raw bytes), and the node's own when it declares one.
func TestReplayUsesRecordedTypes(t *testing.T) {
	dir := t.TempDir()
	dump := writeOwnTypeDump(t, dir)
	if code, out, _ := runBin(t, "list", "schemas", dump); code != 0 || !strings.Contains(out, "own.Cmd") {
		t.Fatalf("list schemas: exit %d %s", code, out)
	}

	code, out, errs := replayNode(t, dump, nil, nil)
	if code != exitFail || !strings.Contains(out, "planner/brake decoded with the dump's type x-edr-packed own.Cmd") ||
		!strings.Contains(out, "value command: expected 0.761") || strings.Contains(out, "bytes[") {
		t.Errorf("exact: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = replayNode(t, dump, nil, nil, "--check", "tolerance", "--abs", "0.01")
	if code != exitOK || !strings.Contains(out, "ok: 20 outputs on 1 topic(s) match the recording") {
		t.Errorf("tolerance without --schema: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = replayNode(t, dump, nil, nil, "--check", "tolerance")
	if code != exitFail || !strings.Contains(out, "value command: expected 0.761") {
		t.Errorf("tolerance at the default bounds: exit %d\n%s", code, out)
	}

	for _, udp := range []bool{false, true} {
		rec := filepath.Join(t.TempDir(), "rec.pack")
		args := []string{"--mode", "input-only", "--record", rec}
		var nodeArgs []string
		if udp {
			port := freeUDPPort(t)
			nodeArgs = []string{"-udp-out", fmt.Sprintf("127.0.0.1:%d", port)}
			args = append(args, "--listen", fmt.Sprintf("udp:127.0.0.1:%d=planner/brake", port))
		}
		if code, out, errs := replayNode(t, dump, nil, nodeArgs, args...); code != exitOK {
			t.Fatalf("record (udp %v): exit %d\n%s%s", udp, code, out, errs)
		}
		s, err := dumpfile.Open(rec)
		if err != nil {
			t.Fatal(err)
		}
		types := map[string]string{} // the types' text and content ID, read before Close unmaps them
		for _, tp := range s.Topics() {
			types[tp.Name] = fmt.Sprintf("%s %x", tp.Type, tp.Type.ID())
		}
		s.Close()
		// over shm the node declares its own type (its layout, named
		// edr.example.Brake), kept; a datagram declares none: the
		// recording's own.Cmd
		want := fmt.Sprintf("%s %x", ownCmd, ownCmd.ID())
		if !udp {
			b := ingest.Packed("edr.example.Brake", readFile(t, brakeLayout))
			want = fmt.Sprintf("%s %x", b, b.ID())
		}
		if got := types["planner/brake"]; got != want {
			t.Errorf("record (udp %v): planner/brake has type %s, want %s", udp, got, want)
		}
		if got := types["vehicle/speed"]; !strings.HasPrefix(got, "x-edr-packed own.Speed ") {
			t.Errorf("record (udp %v): vehicle/speed has type %s", udp, got)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
