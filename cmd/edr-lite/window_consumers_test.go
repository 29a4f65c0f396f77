package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/mcap"
)

// TestE2ETriggerWindowEverywhere: the demo's hard-brake trigger uses the
// recorder's windows (3 s before, 2 s after; it sets no pre or post), and
// every output of the binary shows that window and no "pre 0 / post 0":
// info (text and --json), list triggers, report (JSON and HTML), the JSON
// lines export's dump information, and an MCAP export's metadata records.
func TestE2ETriggerWindowEverywhere(t *testing.T) {
	dir := t.TempDir()
	if code, out, errs := runBin(t, "demo", "--dir", dir, "--duration", "5s"); code != 0 {
		t.Fatalf("demo: %d %s %s", code, out, errs)
	}
	dumps, _ := filepath.Glob(filepath.Join(dir, "*.pack"))
	if len(dumps) != 1 {
		t.Fatalf("demo dumps: %v", dumps)
	}
	demo := dumps[0]
	// checkTrigger checks a trigger as a JSON object: its window is 3 s
	// before and 2 s after its time, and it carries no override.
	checkTrigger := func(what string, tr map[string]any) {
		t.Helper()
		num := func(k string) int64 {
			switch v := tr[k].(type) {
			case float64:
				return int64(v)
			case json.Number:
				n, _ := v.Int64()
				return n
			case string:
				var n json.Number = json.Number(v)
				i, _ := n.Int64()
				return i
			}
			return 0
		}
		if at, from, to := num("time_ns"), num("from_ns"), num("to_ns"); at-from != 3e9 || to-at != 2e9 {
			t.Errorf("%s: window %d..%d around %d, want -3s..+2s: %v", what, from, to, at, tr)
		}
		for _, k := range []string{"pre_ns", "post_ns", "pre_set", "post_set"} {
			if _, ok := tr[k]; ok {
				t.Errorf("%s: %s present though the trigger set no override: %v", what, k, tr)
			}
		}
	}
	decode := func(what, s string, v any) {
		t.Helper()
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, s)
		}
	}

	code, out, errs := runBin(t, "info", "--json", demo)
	if code != 0 {
		t.Fatalf("info --json: %d %s", code, errs)
	}
	var info struct{ Triggers []map[string]any }
	decode("info --json", out, &info)
	if len(info.Triggers) != 1 {
		t.Fatalf("info --json: %d triggers", len(info.Triggers))
	}
	checkTrigger("info --json", info.Triggers[0])
	if _, out, _ = runBin(t, "info", demo); !strings.Contains(out, "window -3s..+2s") || strings.Contains(out, "override") {
		t.Errorf("info: %s", out)
	}

	_, out, _ = runBin(t, "list", "triggers", "--json", demo)
	var lt map[string]any
	decode("list triggers --json", out, &lt)
	checkTrigger("list triggers --json", lt)
	if lt["window"] != "-3s..+2s" {
		t.Errorf("list triggers: window %v", lt["window"])
	}

	code, out, errs = runBin(t, "report", "--format", "json", "-o", "-", demo)
	if code != 0 {
		t.Fatalf("report --format json: %d %s", code, errs)
	}
	var rep struct{ Triggers []map[string]any }
	decode("report --format json", out, &rep)
	if len(rep.Triggers) != 1 {
		t.Fatalf("report: %d triggers", len(rep.Triggers))
	}
	checkTrigger("report --format json", rep.Triggers[0])
	page := filepath.Join(dir, "report.html")
	if code, _, errs := runBin(t, "report", "-o", page, demo); code != 0 {
		t.Fatalf("report: %d %s", code, errs)
	}
	raw, _ := os.ReadFile(page)
	html := strings.ReplaceAll(string(raw), "&#43;", "+") // as html/template escapes it
	if !strings.Contains(html, "−3s … +2s") || strings.Contains(html, ">0ns<") {
		t.Errorf("the report page does not show the window −3s … +2s (or shows 0ns)")
	}

	jl := filepath.Join(dir, "demo.jsonl")
	if code, _, errs := runBin(t, "export", "--format", "jsonl", "-o", jl, demo); code != 0 {
		t.Fatalf("export jsonl: %d %s", code, errs)
	}
	b, _ := os.ReadFile(jl)
	header, _, _ := strings.Cut(string(b), "\n")
	var h struct {
		DumpInfo struct{ Triggers []map[string]any } `json:"dump_info"`
	}
	decode("the JSON lines header", header, &h)
	if len(h.DumpInfo.Triggers) != 1 {
		t.Fatalf("JSON lines: %d triggers", len(h.DumpInfo.Triggers))
	}
	checkTrigger("JSON lines dump_info", h.DumpInfo.Triggers[0])

	mc := filepath.Join(dir, "demo.mcap")
	if code, _, errs := runBin(t, "export", "--format", "mcap", "-o", mc, demo); code != 0 {
		t.Fatalf("export mcap: %d %s", code, errs)
	}
	r, err := mcap.Open(mc, mcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mi, err := r.Info()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, md := range mi.Metadata {
		if md.Name == mcap.MetadataTrigger {
			n++
			kv := map[string]any{}
			for k, v := range md.KV {
				kv[k] = v
			}
			checkTrigger("MCAP edr.trigger", kv)
		}
	}
	if n != 1 {
		t.Errorf("MCAP: %d edr.trigger records", n)
	}
	in, err := dumpfile.ReadInfo(mc)
	if err != nil || len(in.Triggers) != 1 {
		t.Fatalf("MCAP info: %v", err)
	}
	if _, _, pre, post, ok := in.Triggers[0].Window(); !ok || pre != 3e9 || post != 2e9 {
		t.Errorf("MCAP export read back: window %v %d %d", ok, pre, post)
	}
}
