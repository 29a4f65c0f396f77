package fuzz

import (
	"testing"

	"github.com/edr-lite/edr-lite/internal/config"
)

// FuzzConfig feeds arbitrary text to the configuration parser: it must never
// panic, and a configuration it accepts must satisfy the checks it promises.
func FuzzConfig(f *testing.F) {
	f.Add([]byte(config.Default()))
	f.Add([]byte("[recorder]\ncache_size = \"64MiB\"\n[[topic]]\nmatch = \"a/*\"\nkeep_last = 1\n"))
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
