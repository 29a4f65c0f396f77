package mcap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestNodeRecover is the acceptance test of Recover: files of each
// compression cut at 200 random offsets each are recovered, and every
// recovered file is read strictly by the reference reader @mcap/core
// (indexed, with chunk CRCs, and streamed record by record); per topic it
// holds a prefix of the original messages, with every message whose bytes
// end before the cut (uncompressed: exactly those).
func TestNodeRecover(t *testing.T) {
	dir := nodeValidator(t)
	if testing.Short() {
		t.Skip("600 files through node; skipped in -short mode")
	}
	msgs := testMessages(200)
	// per topic, the original payloads in order
	byTopic := map[string][][]byte{}
	for _, m := range msgs {
		byTopic[m.topic] = append(byTopic[m.topic], m.m.Data)
	}
	prefixHash := func(topic string, n int) string {
		h := sha256.New()
		for _, d := range byTopic[topic][:n] {
			h.Write(d)
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	tmp := t.TempDir()
	rng := rand.New(rand.NewPCG(200, 21))
	type cutFile struct {
		path, comp string
		cut        int64
		want       int // messages whose bytes end before the cut
	}
	var files []cutFile
	for _, comp := range []string{CompressionNone, CompressionLZ4, CompressionZstd} {
		full := recoverFile(t, comp, 16<<10, msgs)
		ends := messageEnds(t, full)
		for i := range 200 {
			cut := magicLen + rng.Int64N(int64(len(full))-magicLen+1)
			var out bytes.Buffer
			if _, err := Recover("cut.mcap", full[:cut], &out, RecoverOptions{}); err != nil {
				t.Fatalf("%s cut at %d: %v", comp, cut, err)
			}
			p := filepath.Join(tmp, fmt.Sprintf("%s-%03d.mcap", comp, i))
			if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			want := 0
			for want < len(ends) && ends[want] <= cut {
				want++
			}
			files = append(files, cutFile{p, comp, cut, want})
		}
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.path
	}
	res := runNode(t, dir, paths...)
	for _, f := range files {
		r, ok := res[f.path]
		if !ok || r.Error != "" {
			t.Errorf("%s (cut at %d): @mcap/core: %s", filepath.Base(f.path), f.cut, r.Error)
			continue
		}
		if !r.Indexed.DataSectionCrcOk {
			t.Errorf("%s: data section CRC", filepath.Base(f.path))
		}
		total := 0
		for name, topics := range map[string]map[string]topicStat{"indexed": r.Indexed.Topics, "stream": r.Stream.Topics} {
			n := 0
			for topic, st := range topics {
				if st.Messages > len(byTopic[topic]) || st.Sha256 != prefixHash(topic, st.Messages) {
					t.Errorf("%s %s: topic %s: %d messages are not the first ones", filepath.Base(f.path), name, topic, st.Messages)
				}
				n += st.Messages
			}
			if n < f.want || f.comp == CompressionNone && n != f.want {
				t.Errorf("%s (cut at %d) %s: %d messages, %d end before the cut", filepath.Base(f.path), f.cut, name, n, f.want)
			}
			total = n
		}
		if r.Indexed.Statistics.MessageCount != total {
			t.Errorf("%s: statistics say %d messages, %d read", filepath.Base(f.path), r.Indexed.Statistics.MessageCount, total)
		}
	}
}
