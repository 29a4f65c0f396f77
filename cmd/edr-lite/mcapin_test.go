package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/pack"
)

// writeProducerDump writes a pack dump whose every message has a producer
// and a capture time (what an MCAP dump can carry exactly): speed every
// 10ms, camera#front every 50ms with meta bytes, imu#0 every 20ms, over 1s,
// with a trigger, accounting with types and losses, and a metadata section.
func writeProducerDump(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	w, err := pack.Create(p, pack.WriterOptions{Writer: "test", CreatedNs: 42, TargetFrameSize: 2048})
	if err != nil {
		t.Fatal(err)
	}
	add := func(n, ch string, meta []byte, gen, done int64, data []byte) {
		if err := w.Add(n, ch, meta, gen, done, data); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		ts := t0 + int64(i)*10e6
		add("vehicle/speed", "", nil, ts-1000, ts, []byte{byte(i), 1, 2, 3})
		if i%5 == 0 {
			img := make([]byte, 700+i)
			img[0] = byte(i)
			add("camera", "front", []byte{0x08, byte(i)}, ts-20e6, ts, img)
		}
		if i%2 == 1 {
			add("imu", "0", nil, ts+7, ts+1, []byte{byte(i), byte(i >> 8)})
		}
	}
	err = w.SetDumpInfo(dumpinfo.Info{
		Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "hard-brake", Source: "lua", Rule: "hard_brake", TimeNs: t0 + 500e6, PreNs: 5e8, PostNs: 5e8,
			PreSet: true, PostSet: true, FromNs: t0, ToNs: t0 + 1e9}},
		Topics: []dumpinfo.TopicAccount{
			{Topic: "vehicle/speed#", Type: "f32", Messages: 100, Bytes: 400, Overwritten: 3},
			{Topic: "camera#front", Type: "gray8", Messages: 20, LostAtSource: 4},
			{Topic: "imu#0", Type: "edr.Imu", Messages: 50, Oversize: 1},
		},
		Writer: "test", StartNs: t0, EndNs: t0 + 1e9,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddMetadata("calibration", []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("%v: code %d\n%s%s", args, code, out, errs)
	}
	return out
}

var replayedRe = regexp.MustCompile(`replayed (\d+) messages, ([^ ]+) in `)

// TestOfflineVerbsReadMCAP: the MCAP exports (uncompressed and zstd) of a
// pack dump, and an MCAP export of an MCAP export, are read by export
// --format jsonl (the same lines as the pack dump, header included),
// replay (the same counts and bytes), merge (with a pack dump: the same
// file as merging the two pack dumps, triggers and accounting kept).
func TestOfflineVerbsReadMCAP(t *testing.T) {
	dir := t.TempDir()
	dump := writeProducerDump(t, dir, "a.pack")
	other := writeTestDump(t, dir, "b.pack")
	wantJSONL := mustCLI(t, "export", "--format", "jsonl", dump, "-o", "-")
	wantReplay := replayedRe.FindStringSubmatch(mustCLI(t, "replay", dump, "--to", "discard", "--asfast"))
	packMerge := filepath.Join(dir, "packs.pack")
	mustCLI(t, "merge", other, dump, "-o", packMerge)
	wantCat := mustCLI(t, "cat", packMerge, "--jsonl")
	if wantReplay == nil || wantReplay[1] != "170" || strings.Count(wantJSONL, "\n") != 171 {
		t.Fatalf("pack: replay %q, %d JSON lines", wantReplay, strings.Count(wantJSONL, "\n"))
	}

	for _, comp := range []string{"none", "zstd"} {
		m := filepath.Join(dir, "a-"+comp+".mcap")
		mustCLI(t, "export", "--format", "mcap", "--compression", comp, dump, "-o", m)
		again := filepath.Join(dir, "a-"+comp+"-again.mcap")
		mustCLI(t, "export", "--format", "mcap", "--compression", "lz4", m, "-o", again)
		for _, in := range []string{m, again} {
			if got := mustCLI(t, "export", "--format", "jsonl", in, "-o", "-"); got != wantJSONL { // its provenance is not exported
				t.Errorf("%s: export jsonl differs from the pack's:\n%s\nwant\n%s", in, firstLines(got, 3), firstLines(wantJSONL, 3))
			}
			if got := replayedRe.FindStringSubmatch(mustCLI(t, "replay", in, "--to", "discard", "--asfast")); got == nil || got[0] != wantReplay[0] {
				t.Errorf("%s: replay %q, want %q", in, got, wantReplay)
			}
		}
		merged := filepath.Join(dir, "merged-"+comp+".pack")
		out := mustCLI(t, "merge", other, m, "-o", merged)
		if !strings.Contains(out, "2 inputs, 280 messages") || !strings.Contains(out, "2 triggers") {
			t.Errorf("merge: %s", out)
		}
		if got := mustCLI(t, "cat", merged, "--jsonl"); got != wantCat {
			t.Errorf("merge of a pack and an MCAP dump differs from the merge of the pack dumps")
		}
		info := mustCLI(t, "info", "--json", merged)
		for _, want := range []string{`"overwritten":6`, `"lost_at_source":4`, `"type":"gray8"`, `"reason":"hard-brake"`} {
			if !strings.Contains(info, want) {
				t.Errorf("merged info lacks %s: %s", want, info)
			}
		}
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	return strings.Join(lines[:min(n, len(lines))], "")
}

// TestRulesTestMCAP: "rules test" over an MCAP dump prints byte for byte
// what it prints over the pack dump it came from, in input-only and full
// mode, passing and failing.
func TestRulesTestMCAP(t *testing.T) {
	dir := t.TempDir()
	dump := writeBrakeDump(t, dir)
	m := filepath.Join(dir, "brake.mcap")
	mustCLI(t, "export", "--format", "mcap", "--compression", "zstd", dump, "-o", m)
	for _, args := range [][]string{
		{"--mode", "input-only"},
		{"--mode", "input-only", "--param", "hard_brake.decel=3"},
		{},
		{"--param", "hard_brake.decel=9"},
	} {
		run := func(in string) (int, string) {
			code, out, errs := runCLI(t, append(append([]string{"rules", "test", "--rules", "builtin:hard_brake"}, args...), in)...)
			if errs != "" {
				t.Errorf("%v %s: stderr %s", args, in, errs)
			}
			return code, strings.ReplaceAll(out, in, "DUMP")
		}
		wc, want := run(dump)
		gc, got := run(m)
		if gc != wc || got != want || want == "" {
			t.Errorf("%v: MCAP code %d\n%s\nwant code %d\n%s", args, gc, got, wc, want)
		}
	}
}

// TestOtherWriterMCAPVerbs runs the offline verbs on an MCAP file written
// by the reference TypeScript writer (no edr-lite metadata).
func TestOtherWriterMCAPVerbs(t *testing.T) {
	in := filepath.Join("..", "..", "mcap", "testdata", "other", "chunked-zstd.mcap")
	if out := mustCLI(t, "replay", in, "--to", "discard", "--asfast"); !strings.Contains(out, "replayed 60 messages") {
		t.Errorf("replay: %s", out)
	}
	js := mustCLI(t, "export", "--format", "jsonl", in, "-o", "-")
	if strings.Count(js, "\n") != 61 || !strings.Contains(js, `"writer":"mcap-ts"`) ||
		!strings.Contains(js, `{"topic":"/a","name":"/a","type":"S","type_id":"567f84fd28a1709c0b5c98ee6f88bb89","messages":30}`) ||
		!strings.Contains(js, `"types":[{"id":"567f84fd28a1709c0b5c98ee6f88bb89","encoding":"json","schema_name":"S","schema_encoding":"jsonschema","schema":"e30="}`) ||
		!strings.Contains(js, `{"seq":0,"topic":"/a","ts":1000,"gen_ts":500,"sequence":0,"data":""}`) {
		t.Errorf("export jsonl:\n%s", firstLines(js, 3))
	}
	out := filepath.Join(t.TempDir(), "other.pack")
	if o := mustCLI(t, "merge", in, "-o", out); !strings.Contains(o, "1 inputs, 60 messages") {
		t.Errorf("merge: %s", o)
	}
	if o := mustCLI(t, "verify", out); !strings.Contains(o, ": ok, pack, 1 frame, 60 messages") {
		t.Errorf("verify: %s", o)
	}
}
