package dump

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/pack"
)

// signedDumps writes n dumps with a recorder signing with s into dir
// (MaxFiles bounding it when > 0), starting the clock at start, and
// returns their results.
func signedDumps(t *testing.T, s *evidence.Signer, dir string, n, maxFiles int, start int64, dc Config) []Result {
	t.Helper()
	dc.Dir, dc.Signer, dc.MaxFiles, dc.Policy = dir, s, maxFiles, PolicySeparate
	r, vc, _ := dumpRecorder(t, rigConfig{Rec: engine.Config{Pre: new(50 * time.Millisecond), Post: new(time.Millisecond), Guard: new(time.Duration(0))}, Dump: dc})
	vc.Set(start)
	ids := discover(t, r, "a", "b")
	var out []Result
	for i := range n {
		at := start + int64(i)*1000*ms
		feed(r, vc, ids, at, at+100*ms, 10*ms)
		id, err := r.Trigger(TriggerParams{Reason: fmt.Sprint("n", i)})
		if err != nil {
			t.Fatal(err)
		}
		vc.Set(at + 200*ms)
		res := wait(t, r, id)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		out = append(out, res)
	}
	if st := r.Status(); st.ChainErrors != 0 || st.SigningKey != s.ID().String() {
		t.Fatalf("status: %+v", st)
	}
	r.Close()
	return out
}

// judgeDir judges every dump file of dir and checks the chain.
func judgeDir(t *testing.T, dir string, keys *evidence.Keyring) *evidence.ChainReport {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var dumps []evidence.DirDump
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(LeftoverName(n), PackExt) && !strings.HasSuffix(LeftoverName(n), MCAPExt) {
			continue
		}
		f, err := ReadSeal(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		v := evidence.Judge(f, keys)
		if !v.OK() {
			t.Fatalf("%s: %s", n, v.Summary())
		}
		dumps = append(dumps, evidence.DirDump{Name: n, Verdict: v})
	}
	l, err := evidence.ReadLedger(dir, keys)
	if err != nil {
		t.Fatal(err)
	}
	return evidence.CheckChain(l, dumps)
}

// TestSignedChainedDumps: with a signer every dump (pack and MCAP) is
// sealed and chained; the chain goes on across a restart (counter and
// previous seal); rotation is recorded, so the directory checks out with
// nothing to report; a deleted dump is then reported.
func TestSignedChainedDumps(t *testing.T) {
	s, err := evidence.GenerateSigner(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys := &evidence.Keyring{}
	keys.Add(s.Public())
	for _, format := range []string{"pack", "mcap"} {
		t.Run(format, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "dumps")
			dc := Config{}
			if format == "mcap" {
				dc.NewWriter, dc.Extension = NewMCAPWriter, MCAPExt
			}
			first := signedDumps(t, s, dir, 4, 3, t0, dc)
			second := signedDumps(t, s, dir, 3, 3, t0+100*1000*ms, dc) // a restart
			all := append(first, second...)
			for i, r := range all {
				if r.Seal == nil || r.Seal.Link.Counter != uint64(i+1) || r.Seal.Key != s.ID() {
					t.Fatalf("dump %d: seal %+v", i, r.Seal)
				}
				if i > 0 && r.Seal.Link.Prev != all[i-1].Seal.ID() {
					t.Fatalf("dump %d does not follow %d", i, i-1)
				}
			}
			rep := judgeDir(t, dir, keys)
			if !rep.OK() || rep.Present != 3 || rep.Rotated != 4 || rep.Head != 7 {
				t.Fatalf("after rotation: %+v", rep)
			}
			os.Remove(all[5].Path)
			rep = judgeDir(t, dir, keys)
			if len(rep.Findings) != 1 || rep.Findings[0].Kind != evidence.FindMissing || rep.Findings[0].Counter != 6 {
				t.Fatalf("after a deletion: %+v", rep.Findings)
			}
		})
	}
}

// TestFromRingTornFrameSigned: a signed dump whose borrowing frame (pack)
// or chunk (MCAP) a producer tore is taken back and written again; the
// seal follows what stays in the file and verifies.
func TestFromRingTornFrameSigned(t *testing.T) {
	s, err := evidence.GenerateSigner(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, mc := range []bool{false, true} {
		t.Run(fmt.Sprint("mcap=", mc), func(t *testing.T) { fromRingTorn(t, &fromRingWriter{mcap: mc, signer: s}) })
	}
}

// TestChainTakesInterruptedDump: a dump sealed but interrupted before the
// chain recorded it (a crash between its seal and its rename) is found
// at the next start as NAME.interrupted, taken into the chain as the next
// dump, and the directory then checks out; the next dump follows it.
func TestChainTakesInterruptedDump(t *testing.T) {
	s, _ := evidence.GenerateSigner(rand.Reader)
	keys := &evidence.Keyring{}
	keys.Add(s.Public())
	dir := filepath.Join(t.TempDir(), "dumps")
	signedDumps(t, s, dir, 2, 0, t0, Config{})
	// The crash: a sealed file with the chain's next link, left as .tmp.
	c, _, err := evidence.OpenChain(dir, s, nil, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	link := c.Next()
	tmp := filepath.Join(dir, Name(t0+50*1000*ms, "crash", 9, PackExt)+TmpExt)
	w, err := pack.Create(tmp, pack.WriterOptions{CreatedNs: 1, Seal: evidence.NewSealer(s, evidence.FormatPack, link)})
	if err != nil {
		t.Fatal(err)
	}
	f := pack.NewFrame(0, 1)
	f.AddMetaWithData("a", "", nil, 1, 1, []byte("x"))
	if err := w.WriteFrame(f); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	next := signedDumps(t, s, dir, 1, 0, t0+100*1000*ms, Config{})
	if next[0].Seal.Link.Counter != link.Counter+1 {
		t.Fatalf("the dump after the crash is #%d, want #%d (the interrupted one #%d)", next[0].Seal.Link.Counter, link.Counter+1, link.Counter)
	}
	rep := judgeDir(t, dir, keys)
	if !rep.OK() || rep.Present != 4 || rep.Head != 4 {
		t.Fatalf("after the crash: %+v", rep)
	}
}
