package mcap

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
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

func judgeBytes(t testing.TB, b []byte, keys *evidence.Keyring) evidence.Verdict {
	t.Helper()
	f, err := FindSeal(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return evidence.Judge(f, keys)
}

// writeSealed writes a small dump through a PackWriter: payloads of 4 KiB
// and more borrowed, every second chunk taken back without one of them
// (as the recorder does when a producer overwrote it), with dump info.
func writeSealed(t testing.TB, path string, s *evidence.Signer, link evidence.Link, takeBack bool) {
	t.Helper()
	opt := FileOptions{InPlace: true}
	opt.ChunkSize = 16 << 10
	if s != nil {
		opt.Seal = evidence.NewSealer(s, evidence.FormatMCAP, link)
	}
	pw, err := CreatePackWriter(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	w := pw.Writer()
	lent := 0
	for i := range 120 {
		data := bytes.Repeat([]byte{byte(i)}, 100+(i%3)*2100)
		ts := int64(1e9 + i*1000)
		if len(data) >= 4096 && w.CanBorrow() {
			if err := pw.AddBorrowed("big", "", ts, ts, data); err != nil {
				t.Fatal(err)
			}
			lent++
		} else if err := pw.Add("small", "c", nil, ts, ts, data); err != nil {
			t.Fatal(err)
		}
		if lent > 0 && w.ChunkFull() {
			if err := w.WriteChunkProvisional(); err != nil {
				t.Fatal(err)
			}
			if takeBack && i%2 == 0 {
				if err := w.TakeBackChunk(func(j int) bool { return j != 0 }); err != nil {
					t.Fatal(err)
				}
			} else {
				w.KeepChunk()
			}
			lent = 0
		}
	}
	if err := pw.SetDumpInfo(dumpinfo.Info{Writer: "seal test", StartNs: 1e9, EndNs: 2e9}); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSealedMCAP: a sealed MCAP file verifies with its key, passes the
// reader's verify and doctor (the seal is a Metadata record the summary
// indexes), carries its seal as "edr.seal" metadata, and fails with a
// reason for every changed byte, a cut, an appended byte, another key.
func TestSealedMCAP(t *testing.T) {
	s, keys := testSigner(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "sealed.mcap")
	link := evidence.Link{Chain: evidence.ChainID{7}, Counter: 12, Prev: evidence.Digest{1, 2}}
	writeSealed(t, path, s, link, true)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := judgeBytes(t, b, keys)
	if !v.OK() || v.Seal.Link != link {
		t.Fatalf("%s (%+v)", v.Summary(), v.Seal)
	}
	if probs := Doctor(path, b, ReaderOptions{}); len(probs) > 0 {
		t.Fatalf("doctor: %v", probs)
	}
	r, err := NewReader(b, path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := r.Verify()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range info.Metadata {
		if m.Name == evidence.MetadataName {
			got, err := evidence.ParseMap(m.KV)
			found = err == nil && got == *v.Seal
		}
	}
	if !found {
		t.Fatalf("no edr.seal metadata equal to the seal in %v", info.Metadata)
	}
	// Without taking chunks back: the digest differs, both verify.
	plain := filepath.Join(dir, "kept.mcap")
	writeSealed(t, plain, s, link, false)
	pb, _ := os.ReadFile(plain)
	if pv := judgeBytes(t, pb, keys); !pv.OK() || pv.Seal.Digest == v.Seal.Digest {
		t.Fatalf("kept: %s", pv.Summary())
	}

	// Every byte of the seal's end of the file (the seal, DataEnd, the
	// summary, the footer), the header, and a sample of the rest.
	offs := map[int]bool{}
	for i := range 512 {
		offs[i] = true
	}
	for i := max(0, int(v.Seal.At)-256); i < len(b); i++ {
		offs[i] = true
	}
	for i := range 300 {
		offs[(i*7919)%len(b)] = true
	}
	for off := range offs {
		c := bytes.Clone(b)
		c[off] ^= 0x01
		if v := judgeBytes(t, c, keys); v.OK() || v.Reason == "" {
			t.Fatalf("byte %d of %d flipped: %s", off, len(b), v.Summary())
		}
	}
	for name, c := range map[string][]byte{"cut": b[:len(b)-1], "appended": append(bytes.Clone(b), 0)} {
		if v := judgeBytes(t, c, keys); v.Status != evidence.Invalid || v.Reason == "" {
			t.Fatalf("%s: %s", name, v.Summary())
		}
	}
	other, _ := testSigner(t)
	op := filepath.Join(dir, "other.mcap")
	writeSealed(t, op, other, link, true)
	ob, _ := os.ReadFile(op)
	if v := judgeBytes(t, ob, keys); v.Status != evidence.UnknownKey {
		t.Fatalf("another key: %s", v.Summary())
	}
	up := filepath.Join(dir, "unsigned.mcap")
	writeSealed(t, up, nil, link, true)
	ub, _ := os.ReadFile(up)
	if v := judgeBytes(t, ub, keys); v.Status != evidence.Unsigned || v.Reason != "" {
		t.Fatalf("unsigned: %s", v.Summary())
	}
}

// TestNodeReadsSealedMCAP: the reference reader (@mcap/core) reads a
// sealed MCAP file as any other, indexed and streamed: every message, the
// data section CRC (which covers the seal) checks out, and the seal is a
// Metadata record named edr.seal it lists.
func TestNodeReadsSealedMCAP(t *testing.T) {
	dir := nodeValidator(t)
	s, _ := testSigner(t)
	path := filepath.Join(t.TempDir(), "sealed.mcap")
	writeSealed(t, path, s, evidence.Link{Chain: evidence.ChainID{3}, Counter: 1}, true)
	res := runNode(t, dir, path)
	r, ok := res[path]
	if !ok || r.Error != "" {
		t.Fatalf("@mcap/core failed: %s", r.Error)
	}
	ix := r.Indexed
	if !ix.DataSectionCrcOk || r.Stream.Records["DataEnd"] != 1 {
		t.Fatalf("data CRC ok %v, records %v", ix.DataSectionCrcOk, r.Stream.Records)
	}
	seal := false
	for _, m := range ix.Metadata {
		seal = seal || m.Name == evidence.MetadataName && m.KV["signature"] != ""
	}
	if !seal {
		t.Fatalf("no edr.seal metadata in %+v", ix.Metadata)
	}
	var n int
	for _, ts := range ix.Topics {
		n += ts.Messages
	}
	if n == 0 || len(r.Stream.Topics) != len(ix.Topics) {
		t.Fatalf("topics indexed %+v, streamed %+v", ix.Topics, r.Stream.Topics)
	}
}

// tornLender is a Lender that reports its memory overwritten when torn.
type tornLender struct{ torn bool }

func (l *tornLender) Intact() bool { return !l.torn }

// TestSealLentChunksHashedBehind: chunks written with WriteChunkLent are
// hashed on the seal's worker after KeepChunk, while the next chunk is
// built (in the other chunk buffer); a chunk whose borrowed payload is
// overwritten after the writer's check (its lender says so) is hashed
// from the file; one taken back is not hashed: the file verifies. With a
// lender that hides the overwrite it does not (the test can fail).
func TestSealLentChunksHashedBehind(t *testing.T) {
	s, keys := testSigner(t)
	for _, lie := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "lent.mcap")
		opt := FileOptions{InPlace: true}
		opt.ChunkSize = 64 << 10
		opt.Seal = evidence.NewSealer(s, evidence.FormatMCAP, evidence.Link{})
		opt.Seal.Async(func() {})
		pw, err := CreatePackWriter(path, opt)
		if err != nil {
			t.Fatal(err)
		}
		w := pw.Writer()
		var bufs [2][]byte
		var lenders [2]tornLender
		for i := range 12 {
			b := &bufs[i%2]
			if *b == nil {
				*b = make([]byte, 80<<10)
			}
			for j := range *b {
				(*b)[j] = byte(i + j)
			}
			ts := int64(1e9 + i*1000)
			if err := pw.Add("small", "c", nil, ts, ts, []byte("copied into the chunk")); err != nil {
				t.Fatal(err)
			}
			if err := pw.AddBorrowed("big", "", ts, ts, *b); err != nil {
				t.Fatal(err)
			}
			l := &lenders[i%2]
			*l = tornLender{}
			if err := w.WriteChunkLent(l); err != nil {
				t.Fatal(err)
			}
			if i%4 == 1 {
				if err := w.TakeBackChunk(func(int) bool { return true }); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if i%3 == 0 { // checked intact, then overwritten before the worker hashes it
				clear(*b)
				l.torn = !lie
			}
			w.KeepChunk()
		}
		if err := pw.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if v := judgeBytes(t, b, keys); v.OK() == lie {
			t.Fatalf("lender lies %v: %s", lie, v.Summary())
		}
	}
}
