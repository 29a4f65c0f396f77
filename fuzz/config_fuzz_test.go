package fuzz

import (
	"math"
	"testing"

	"github.com/edr-lite/edr-lite/internal/config"
)

// FuzzConfig feeds arbitrary text to the configuration parser: it must never
// panic, and a configuration it accepts must satisfy the checks it promises.
func FuzzConfig(f *testing.F) {
	f.Add([]byte(config.Default()))
	f.Add([]byte("[recorder]\ncache_size = \"64MiB\"\n[[topic]]\nmatch = \"a/*\"\nkeep_last = 1\n"))
	// the decoder goes past problems: bare words, duplicates, wrong types,
	// numeric params, arrays of tables where a table belongs
	f.Add([]byte("[recorder]\npost = 2seconds\npre = \"1s\"\npre = \"2s\"\ncache_size = [1]\n[rotation]\nmax_files = \"3\"\n"))
	f.Add([]byte("[[rule]]\nbuiltin = \"threshold\"\nname = \"t\"\nparams = { high = 300.0, offset = 0, on = true, x = [1], t = 1979-05-27T07:32:00Z }\n[[recorder]]\n[topic]\nmatch = 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse("fuzz.toml", data)
		if err != nil {
			if c != nil {
				t.Fatal("error with a partial result")
			}
			return
		}
		if c.Recorder.CacheSize < 1<<20 || c.Recorder.MaxPacket <= 0 || c.Recorder.DumpDir == "" {
			t.Fatalf("accepted an invalid recorder section: %+v", c.Recorder)
		}
		for _, tp := range c.Topics {
			if tp.Match == "" || (tp.OnlyFront && tp.OnlyBack) || tp.KeepLast < 0 {
				t.Fatalf("accepted an invalid topic: %+v", tp)
			}
		}
	})
}

// FuzzChecks feeds arbitrary text to the parser of replay's checks file, as
// TOML and as JSON: it must never panic, give no partial result with an
// error, and every check it accepts has a known mode and alignment, finite
// non-negative tolerances, a window where nearest needs one and at most one
// schema.
func FuzzChecks(f *testing.F) {
	f.Add([]byte("[[check]]\ntopic = \"planner/*\"\nmode = \"tolerance\"\nabs = 1e-6\nlayout = \"b.layout\"\n"), false)
	f.Add([]byte(`{"check": [{"topic": "a", "align": "nearest", "window": "5ms", "json": true}]}`), true)
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		name := "fuzz.toml"
		if asJSON {
			name = "fuzz.json"
		}
		c, err := config.ParseChecks(name, data)
		if err != nil {
			if c != nil {
				t.Fatal("error with a partial result")
			}
			return
		}
		for _, k := range c.Check {
			schemas := 0
			for _, set := range []bool{k.Layout != "", k.Protobuf != "", k.JSON} {
				if set {
					schemas++
				}
			}
			if (k.Mode != "exact" && k.Mode != "tolerance" && k.Mode != "none") || (k.Align != "seq" && k.Align != "time" && k.Align != "nearest") ||
				!(k.Abs >= 0) || !(k.Rel >= 0) || math.IsInf(k.Abs+k.Rel, 0) || (k.Align == "nearest" && k.Window <= 0) || k.Window < 0 || schemas > 1 {
				t.Fatalf("accepted an invalid check: %+v", k)
			}
		}
	})
}
