package pack

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
)

// smallFile returns a closed file of n frames with dump info, and the frame
// offsets (plus the end of the last frame).
func smallFile(t testing.TB, n int, c Compression) ([]byte, []int64) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewStreamWriter(&buf, WriterOptions{Writer: "t", CreatedNs: 1, Compression: c})
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for _, f := range sampleFrames(n) {
		offs = append(offs, w.Offset())
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	offs = append(offs, w.Offset())
	w.SetDumpInfo(dumpinfo.Info{Writer: "t", Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "r"}}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), offs
}

func recoverToBytes(t testing.TB, name string, b []byte) (*RecoverReport, []byte) {
	t.Helper()
	var out bytes.Buffer
	rep, err := RecoverTo(name, b, func(o WriterOptions) (*Writer, error) { return NewStreamWriter(&out, o) })
	if err != nil {
		t.Fatalf("%s: recover: %v", name, err)
	}
	return rep, out.Bytes()
}

func TestVerifyGoodFile(t *testing.T) {
	for _, c := range []Compression{CompressNone, CompressLZ4, CompressZstd} {
		b, _ := smallFile(t, 10, c)
		v := VerifyBytes("good", b)
		if !v.OK() || !v.Complete || v.Frames != 10 || v.Metadata != 1 || v.Messages != 25 {
			t.Fatalf("%v: %+v %v", c, v, v.Problems)
		}
	}
}

// shortStride thins the every-offset tests with -short (the CI runs them so
// under qemu-user): every third offset. 3 is coprime with the 4- and 8-byte
// field alignment, so every byte position within a field is still hit.
const shortStride = 3

// Corrupting any single byte of the file is reported by Verify, with the
// offset of the damaged record; Recover salvages every other frame and its
// output verifies.
func TestEverySingleByteFlip(t *testing.T) {
	for _, c := range []Compression{CompressNone, CompressZstd} {
		good, offs := smallFile(t, 4, c)
		for i := range good {
			if testing.Short() && i%shortStride != 0 {
				continue
			}
			b := bytes.Clone(good)
			b[i] ^= 0x01
			v := VerifyBytes("flip", b)
			if v.OK() {
				t.Fatalf("%v: flip at %d not reported", c, i)
			}
			frame := -1
			for k := 0; k+1 < len(offs); k++ {
				if int64(i) >= offs[k] && int64(i) < offs[k+1] {
					frame = k
				}
			}
			if frame >= 0 {
				p := v.Problems[0]
				if p.Offset < offs[frame] || p.Offset >= offs[frame+1] {
					t.Fatalf("%v: flip at %d in frame %d [%d,%d): first problem %v", c, i, frame, offs[frame], offs[frame+1], p)
				}
			}
			rep, out := recoverToBytes(t, "flip", b)
			ov := VerifyBytes("recovered", out)
			if !ov.OK() || !ov.Complete {
				t.Fatalf("%v: flip at %d: recovered file does not verify: %v", c, i, ov.Problems)
			}
			wantFrames := 4
			if frame >= 0 {
				wantFrames = 3
				if rep.LostFrames != 1 || len(rep.Lost) != 1 {
					t.Fatalf("%v: flip at %d: lost %d frames in %d ranges, want 1", c, i, rep.LostFrames, len(rep.Lost))
				}
			}
			if rep.Frames != wantFrames || ov.Frames != wantFrames {
				t.Fatalf("%v: flip at %d: recovered %d (verified %d) frames, want %d", c, i, rep.Frames, ov.Frames, wantFrames)
			}
		}
	}
}

// A file cut at any byte recovers to its last whole frame, and the result
// verifies.
func TestTruncationAtEveryOffset(t *testing.T) {
	good, offs := smallFile(t, 5, CompressLZ4)
	for cut := 0; cut <= len(good); cut++ {
		if testing.Short() && cut%shortStride != 0 && cut != len(good) {
			continue
		}
		b := good[:cut]
		whole := 0
		for k := 0; k+1 < len(offs); k++ {
			if offs[k+1] <= int64(cut) {
				whole = k + 1
			}
		}
		rep, out := recoverToBytes(t, "cut", b)
		ov := VerifyBytes("recovered", out)
		if !ov.OK() || !ov.Complete {
			t.Fatalf("cut %d: recovered file does not verify: %v", cut, ov.Problems)
		}
		if rep.Frames != whole {
			t.Fatalf("cut %d: recovered %d frames, want %d", cut, rep.Frames, whole)
		}
		if cut > int(offs[len(offs)-1]) && cut < len(good) && VerifyBytes("cut", b).Complete {
			t.Fatalf("cut %d: a cut file claims to be complete", cut)
		}
	}
}

// Recover resynchronises past a corrupt region to the next valid frame and
// reports the lost time range.
func TestRecoverResyncsPastGarbage(t *testing.T) {
	good, offs := smallFile(t, 10, CompressNone)
	b := bytes.Clone(good)
	// Scribble over frames 3 and 4 and the start of 5.
	for i := offs[3] + 10; i < offs[5]+20; i++ {
		b[i] = 0xEE
	}
	frames := sampleFrames(10)
	// Without the index (file cut before it), the loss is bounded by the
	// neighbouring intact frames.
	rep, _ := recoverToBytes(t, "noindex", b[:offs[10]])
	if rep.Frames != 7 || rep.LostFrames < 1 || len(rep.Lost) != 1 || rep.Lost[0].Offset != offs[3] ||
		rep.Lost[0].Length != offs[6]-offs[3] {
		t.Fatalf("report %+v", rep)
	}
	if l := rep.Lost[0]; l.FromNs != frames[2].DoneTime() || l.ToNs != frames[6].Time() {
		t.Fatalf("no index: lost range %d..%d, want %d..%d", l.FromNs, l.ToNs, frames[2].DoneTime(), frames[6].Time())
	}
	// With the index, the loss is exact.
	in := filepath.Join(t.TempDir(), "bad.pack")
	out := filepath.Join(t.TempDir(), "fixed.pack")
	os.WriteFile(in, b, 0o644)
	rep, err := Recover(in, out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Frames != 7 || rep.LostFrames != 3 || len(rep.Lost) != 1 || rep.Lost[0].Offset != offs[3] ||
		rep.Lost[0].Length != offs[6]-offs[3] {
		t.Fatalf("report %+v", rep)
	}
	if l := rep.Lost[0]; l.FromNs != frames[3].Time() || l.ToNs != frames[5].DoneTime() {
		t.Fatalf("indexed: lost range %d..%d, want %d..%d", l.FromNs, l.ToNs, frames[3].Time(), frames[5].DoneTime())
	}
	if err := VerifyFile(out); err != nil {
		t.Fatal(err)
	}
	r, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var f Frame
	var ids []uint64
	for r.ReadInto(&f) == nil {
		ids = append(ids, f.ID())
	}
	if want := []uint64{0, 1, 2, 6, 7, 8, 9}; !equalU64(ids, want) {
		t.Fatalf("recovered ids %v, want %v", ids, want)
	}
	if d, ok := r.DumpInfo(); !ok || d.Triggers[0].Reason != "r" {
		t.Fatalf("dump info not recovered: %+v %v", d, ok)
	}
	v, _ := Verify(in)
	if len(v.Problems) == 0 || v.Problems[0].Offset != offs[3] {
		t.Fatalf("verify of damaged file: %v", v.Problems)
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// hostileFile inserts, right after the file header of a closed file of 10
// frames, size bytes of fake frame headers (one every FrameHeaderSize
// bytes) that each claim a frame over half the rest of the file with a
// wrong head CRC: resynchronising past them must not hash the rest of the
// file once per header (quadratic), and must still find every real frame.
func hostileFile(t testing.TB, size int) []byte {
	good, _ := smallFile(t, 10, CompressNone)
	hostile := make([]byte, size-size%FrameHeaderSize)
	total := len(good) + len(hostile)
	for at := 0; at < len(hostile); at += FrameHeaderSize {
		h := hostile[at:]
		le.PutUint32(h, frameMagic)
		le.PutUint32(h[4:], 0xdeadbeef)                                     // head CRC: wrong
		le.PutUint32(h[12:], uint32(total-HeaderSize-at-FrameHeaderSize)/2) // meta over half the rest of the file
	}
	out := append([]byte(nil), good[:HeaderSize]...)
	out = append(out, hostile...)
	return append(out, good[HeaderSize:]...)
}

func TestVerifyHostileFakeHeaders(t *testing.T) {
	b := hostileFile(t, 64<<10)
	v := VerifyBytes("hostile.pack", b)
	if v.Frames != 10 || v.OK() {
		t.Fatalf("frames %d, problems %d: want the 10 real frames found past the fake headers, and the damage reported", v.Frames, len(v.Problems))
	}
	found := false
	for _, p := range v.Problems {
		found = found || p.Offset == HeaderSize
	}
	if !found {
		t.Errorf("problems %v: want the fake headers reported at %d", v.Problems, HeaderSize)
	}
	rep, out := recoverToBytes(t, "hostile.pack", b)
	if rep.Frames != 10 || !VerifyBytes("out.pack", out).OK() {
		t.Fatalf("recover: %d frames, want 10, and an output that verifies", rep.Frames)
	}
}

// BenchmarkVerifyHostile: with range CRCs the time grows linearly with the
// hostile region (compare the sizes' ns/op: 4x the bytes, about 4x the
// time; hashing the rest of the file per fake header made it 16x).
func BenchmarkVerifyHostile(b *testing.B) {
	for _, size := range []int{256 << 10, 1 << 20} {
		f := hostileFile(b, size)
		b.Run(fmt.Sprintf("hostile=%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(f)))
			for b.Loop() {
				if v := VerifyBytes("hostile.pack", f); v.Frames != 10 {
					b.Fatal(v.Frames)
				}
			}
		})
	}
}
