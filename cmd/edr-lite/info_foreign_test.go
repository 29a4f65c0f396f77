package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/mcap"
)

// TestE2EInfoForeignMCAPHeld: info of another writer's MCAP file (two
// messages at log times 1.0 s and 1.1 s, no edr metadata) says it holds
// 100ms, from the first message to the last — not "0s held".
func TestE2EInfoForeignMCAPHeld(t *testing.T) {
	p := filepath.Join(t.TempDir(), "other.mcap")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := mcap.NewWriter(f, mcap.Options{Library: "another writer"})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := w.AddChannel(0, "/x", "json", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, at := range []uint64{1_000_000_000, 1_100_000_000} {
		if err := w.WriteMessage(&mcap.Message{ChannelID: ch, Sequence: uint32(i), LogTime: at, PublishTime: at, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	code, out, errs := runBin(t, "info", p)
	if code != 0 || !strings.Contains(out, "duration:   100ms\n") || strings.Contains(out, "0s held") {
		t.Errorf("info: exit %d\n%s%s", code, out, errs)
	}
	_, js, _ := runBin(t, "info", "--json", p)
	var in struct {
		HeldStartNs int64 `json:"held_start_ns"`
		HeldEndNs   int64 `json:"held_end_ns"`
	}
	if err := json.Unmarshal([]byte(js), &in); err != nil || in.HeldStartNs != 1e9 || in.HeldEndNs != 1.1e9 {
		t.Errorf("info --json: held %d..%d (%v), want 1e9..1.1e9\n%s", in.HeldStartNs, in.HeldEndNs, err, js)
	}
}
