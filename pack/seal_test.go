package pack

import (
	"bytes"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/evidence"
)

func testSigner(t testing.TB) (*evidence.Signer, *evidence.Keyring) {
	t.Helper()
	s, err := evidence.GenerateSigner(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := &evidence.Keyring{}
	k.Add(s.Public())
	return s, k
}

func judgeFile(t testing.TB, path string, keys *evidence.Keyring) evidence.Verdict {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	found, err := FindSeal(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return evidence.Judge(found, keys)
}

// TestSealedFileEveryWriter: every writer (write(2), stream, mmap) seals
// the same bytes; the file verifies with its key, reads as before (Reader,
// StreamReader, Verify: the seal section is skipped), and judges unsigned
// without the seal.
func TestSealedFileEveryWriter(t *testing.T) {
	s, keys := testSigner(t)
	dir := t.TempDir()
	frames := sampleFrames(40)
	link := evidence.Link{Chain: evidence.ChainID{1}, Counter: 3, Prev: evidence.Digest{9}}
	var files [][]byte
	for _, mode := range []string{"write", "stream", "mmap"} {
		path := filepath.Join(dir, mode+".pack")
		sealer := evidence.NewSealer(s, evidence.FormatPack, link)
		opts := WriterOptions{Writer: "seal test", CreatedNs: 1, Seal: sealer, Compression: CompressLZ4}
		switch mode {
		case "stream":
			var buf bytes.Buffer
			w, err := NewStreamWriter(&buf, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range frames {
				if err := w.WriteFrame(f); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.AddMetadata("x", []byte("y")); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(path, buf.Bytes(), 0o644)
		default:
			opts.Mmap = mode == "mmap"
			w, err := Create(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range frames {
				if err := w.WriteFrame(f); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.AddMetadata("x", []byte("y")); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := os.ReadFile(path)
		files = append(files, b)
		v := judgeFile(t, path, keys)
		if !v.OK() {
			t.Fatalf("%s: %s", mode, v.Summary())
		}
		if got, _ := sealer.Sealed(); *v.Seal != got || v.Seal.Link != link {
			t.Fatalf("%s: seal read %+v, written %+v", mode, *v.Seal, got)
		}
		rep, err := Verify(path)
		if err != nil || !rep.OK() || !rep.Complete || rep.Frames != len(frames) {
			t.Fatalf("%s: verify %+v %v", mode, rep, err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var fr Frame
		n := 0
		for r.ReadInto(&fr) == nil {
			framesEqual(t, &fr, frames[n])
			n++
		}
		r.Close()
		if n != len(frames) {
			t.Fatalf("%s: read %d frames, wrote %d", mode, n, len(frames))
		}
		sr, err := NewStreamReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		n = 0
		for {
			err := sr.ReadInto(&fr)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: stream reader: %v", mode, err)
			}
			n++
		}
		if n != len(frames) || !sr.Indexed() {
			t.Fatalf("%s: stream reader %d frames, indexed %v", mode, n, sr.Indexed())
		}
	}
	if !bytes.Equal(files[0], files[1]) || !bytes.Equal(files[0], files[2]) {
		t.Fatal("the writers sealed different bytes")
	}
	unsigned := filepath.Join(dir, "unsigned.pack")
	writeFile(t, unsigned, frames, WriterOptions{Writer: "seal test", CreatedNs: 1})
	if v := judgeFile(t, unsigned, keys); v.Status != evidence.Unsigned || v.Reason != "" {
		t.Fatalf("unsigned file: %s", v.Summary())
	}
}

// TestSealFollowsTakenBackFrames: frames written provisionally and taken
// back leave the hash as if they had never been written.
func TestSealFollowsTakenBackFrames(t *testing.T) {
	s, keys := testSigner(t)
	path := filepath.Join(t.TempDir(), "prov.pack")
	w, err := Create(path, WriterOptions{CreatedNs: 1, Seal: evidence.NewSealer(s, evidence.FormatPack, evidence.Link{})})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{7}, 100<<10) // the vector path
	for i := range 10 {
		f := NewFrame(uint64(i), int64(i))
		f.AddMetaWithData("t", "", nil, int64(i), int64(i), big)
		small := NewFrame(uint64(i), int64(i))
		small.AddMetaWithData("s", "", nil, int64(i), int64(i), []byte("x"))
		for _, g := range []*Frame{f, small} {
			if err := w.WriteFrameProvisional(g); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				if err := w.TakeBackFrame(); err != nil {
					t.Fatal(err)
				}
				if err := w.WriteFrame(g); err != nil {
					t.Fatal(err)
				}
			} else {
				w.KeepFrame()
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if v := judgeFile(t, path, keys); !v.OK() {
		t.Fatal(v.Summary())
	}
}

// TestSealDetectsChanges: a flipped byte anywhere, a cut, an appended byte,
// another key, a seal moved from another file: each fails with a reason.
func TestSealDetectsChanges(t *testing.T) {
	s, keys := testSigner(t)
	other, _ := testSigner(t)
	dir := t.TempDir()
	write := func(name string, signer *evidence.Signer, created int64) []byte {
		p := filepath.Join(dir, name)
		writeFile(t, p, sampleFrames(5), WriterOptions{CreatedNs: created, Seal: evidence.NewSealer(signer, evidence.FormatPack, evidence.Link{})})
		b, _ := os.ReadFile(p)
		return b
	}
	good := write("good.pack", s, 1)
	check := func(name string, b []byte, want evidence.Status) {
		t.Helper()
		p := filepath.Join(dir, "case.pack")
		os.WriteFile(p, b, 0o644)
		v := judgeFile(t, p, keys)
		if v.Status != want || v.Reason == "" {
			t.Fatalf("%s: %s (status %v, want %v)", name, v.Summary(), v.Status, want)
		}
	}
	for off := range len(good) {
		b := bytes.Clone(good)
		b[off] ^= 0x20
		p := filepath.Join(dir, "case.pack")
		os.WriteFile(p, b, 0o644)
		if v := judgeFile(t, p, keys); v.OK() || v.Reason == "" {
			t.Fatalf("byte %d of %d flipped: %s", off, len(good), v.Summary())
		}
	}
	check("cut", good[:len(good)-1], evidence.Invalid)
	check("cut before the seal", good[:len(good)-TrailerSize-300], evidence.Unsigned)
	check("appended", append(bytes.Clone(good), 0), evidence.Invalid)
	check("another key", write("other.pack", other, 1), evidence.UnknownKey)
	// The seal of another file of the same size swapped in.
	twin := write("twin.pack", s, 2)
	if len(twin) != len(good) {
		t.Fatalf("twin of %d bytes, %d", len(twin), len(good))
	}
	off, ok := trailerIndex(good[len(good)-TrailerSize:], int64(len(good)))
	if !ok {
		t.Fatal("no trailer")
	}
	b, at := bytes.Clone(good), int(off)-sealRecordSize
	copy(b[at:at+sealRecordSize], twin[at:at+sealRecordSize])
	if bytes.Equal(b, good) {
		t.Fatal("the twin has the same seal")
	}
	check("swapped seal", b, evidence.Invalid)
}

// tornLender is a Lender that reports its memory overwritten when torn.
type tornLender struct{ torn bool }

func (l *tornLender) Intact() bool { return !l.torn }

// TestSealLentFramesHashedBehind: frames written with WriteFrameLent are
// hashed on the seal's worker after KeepFrame, one behind, their blocks
// in two alternating buffers; a frame whose lent memory a producer
// overwrites after the writer's check (its lender says so) is hashed from
// the file instead, and one taken back is not hashed: the file verifies.
// With a lender that hides the overwrite it does not (the test can fail).
func TestSealLentFramesHashedBehind(t *testing.T) {
	s, keys := testSigner(t)
	for _, lie := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "lent.pack")
		sealer := evidence.NewSealer(s, evidence.FormatPack, evidence.Link{})
		sealer.Async(func() {})
		w, err := Create(path, WriterOptions{CreatedNs: 1, Seal: sealer, HashBehind: true})
		if err != nil {
			t.Fatal(err)
		}
		var bufs [2][]byte
		var lenders [2]tornLender
		for i := range 12 {
			b := &bufs[i%2]
			if *b == nil {
				*b = make([]byte, 100<<10)
			}
			for j := range *b {
				(*b)[j] = byte(i + j)
			}
			l := &lenders[i%2]
			*l = tornLender{}
			f := NewFrame(uint64(i), int64(i))
			f.AddMetaBorrowed("t", "", nil, int64(i), int64(i), *b)
			if err := w.WriteFrameLent(f, l); err != nil {
				t.Fatal(err)
			}
			if i%4 == 1 {
				if err := w.TakeBackFrame(); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if i%3 == 0 {
				// checked intact by the writer, then overwritten before
				// the worker hashes it
				clear(*b)
				l.torn = !lie
			}
			w.KeepFrame()
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if v := judgeFile(t, path, keys); v.OK() == lie {
			t.Fatalf("lender lies %v: %s", lie, v.Summary())
		}
	}
}
