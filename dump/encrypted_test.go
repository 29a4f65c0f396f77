package dump

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/evidence/crypt"
	"github.com/edr-lite/edr-lite/mcap"
)

// TestEncryptedDumpsDecrypt: a pack and an MCAP dump encrypted at rest
// (EncryptedWriter), larger than the file writer's buffers so that the
// ciphertext goes through several hand-overs to its writer thread,
// decrypt with the recipient's identity to the messages ingested, in
// order; no temporary file is left; with messages of 3000 bytes and of
// 100 KiB (larger than age's chunks: a frame's block spans several).
// (Run with -race: the dumper, the age stream and the writer thread
// share the file's buffers.)
func TestEncryptedDumpsDecrypt(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mcapFormat bool
		pad        int   // bytes per message
		step       int64 // between messages of a topic
	}{{false, 3000, ms}, {true, 3000, ms}, {false, 100 << 10, 20 * ms}, {true, 100 << 10, 20 * ms}} {
		mcapFormat := tc.mcapFormat
		ext := PackExt
		if mcapFormat {
			ext = MCAPExt
		}
		t.Run(fmt.Sprintf("%s/%d", ext, tc.pad), func(t *testing.T) {
			r, vc, dir := dumpRecorder(t, rigConfig{
				Rec:  engine.Config{Pre: new(2 * time.Second), Post: new(10 * time.Millisecond), Guard: new(time.Duration(0)), TopicBytes: 8 << 20, CacheSize: 32 << 20},
				Dump: Config{NewWriter: EncryptedWriter([]age.Recipient{id.Recipient()}, mcapFormat, false), Extension: ext + crypt.Ext, FrameSize: 64 << 10},
			})
			ids := discover(t, r, "a", "b")
			pad := bytes.Repeat([]byte{'x'}, tc.pad)
			var want []string
			for ns := t0; ns <= t0+1000*ms; ns += tc.step {
				vc.Set(ns)
				for _, name := range []string{"a", "b"} {
					p := fmt.Appendf(nil, "%s@%d:%s", name, (ns-t0)/ms, pad)
					r.Ingest(ids[name], ns-1, p)
					want = append(want, string(p))
				}
			}
			trig, err := r.Trigger(TriggerParams{Reason: "enc"})
			if err != nil {
				t.Fatal(err)
			}
			vc.Set(t0 + 1100*ms)
			res := wait(t, r, trig)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if !strings.HasSuffix(res.Path, ext+crypt.Ext) || !crypt.IsEncrypted(res.Path) {
				t.Fatalf("%s: not an age file", res.Path)
			}
			if res.Bytes < 4*(1<<20) {
				t.Fatalf("dump of %d bytes: want more than the writer's buffers", res.Bytes)
			}
			plain := filepath.Join(t.TempDir(), "plain"+ext)
			f, err := os.Create(plain)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := crypt.Decrypt(res.Path, f, []age.Identity{id}); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			var got []string
			if mcapFormat {
				got = mcapDatas(t, plain)
			} else {
				ms, _ := readDump(t, plain)
				got = datas(ms)
			}
			if len(got) != len(want) {
				t.Fatalf("%d messages decrypted, want %d", len(got), len(want))
			}
			gotSet := map[string]bool{}
			for _, g := range got {
				gotSet[g] = true
			}
			for _, w := range want {
				if !gotSet[w] {
					t.Fatalf("message %.12q... missing after decryption", w)
				}
			}
			left, _ := filepath.Glob(filepath.Join(dir, "*"+TmpExt))
			if len(left) > 0 {
				t.Fatalf("left behind: %v", left)
			}
		})
	}
}

// mcapDatas returns the payloads of an MCAP dump's messages.
func mcapDatas(t *testing.T, path string) []string {
	t.Helper()
	mr, err := mcap.Open(path, mcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	pr, err := mcap.NewPackReader(mr)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		ok, err := pr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, string(pr.Message().Data))
	}
}
