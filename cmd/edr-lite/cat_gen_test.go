package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// TestCatJSONLGenAbsentWhenUnknown is issue 30 item 16 through the binary:
// cat --jsonl (and --decode) follows its help: gen_ts and gen_time are
// absent for a message whose producer time is unknown (a UDP topic), and
// both present when it is known. Before, "gen_ts":0 was printed.
func TestCatJSONLGenAbsentWhenUnknown(t *testing.T) {
	p := filepath.Join(t.TempDir(), "udp.pack")
	w, err := pack.Create(p, pack.WriterOptions{Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	typ := ingest.Packed("t.Speed", "f32le speed")
	w.SetTopicType("udp/30490", "", typ, t0)
	w.SetTopicType("vehicle/speed", "", typ, t0)
	if err := w.Add("udp/30490", "", nil, 0, t0, []byte{0, 0, 0xa0, 0x41}); err != nil {
		t.Fatal(err)
	}
	if err := w.Add("vehicle/speed", "", nil, t0-1000, t0+1, []byte{0, 0, 0xa0, 0x41}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--jsonl", "--decode"} {
		code, out, errs := runBin(t, "cat", flag, p)
		if code != 0 {
			t.Fatalf("cat %s: exit %d %s", flag, code, errs)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 {
			t.Fatalf("cat %s: %q", flag, out)
		}
		for i, line := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%s: %v: %s", flag, err, line)
			}
			_, gen := m["gen_ts"]
			_, genTime := m["gen_time"]
			if want := i == 1; gen != want || genTime != want {
				t.Errorf("cat %s, %s: gen_ts present %v, gen_time present %v, want %v: %s", flag, m["topic"], gen, genTime, want, line)
			}
		}
	}
}
