//go:build ecu && !http

package daemon

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/internal/config"
)

// TestCheckRefusesHTTP: the ECU build's Check (config check and run)
// refuses every setting of the HTTP stack it leaves out, one problem per
// feature at its key, naming the builds that have it; the default
// configuration, which sets none, passes.
func TestCheckRefusesHTTP(t *testing.T) {
	dir := t.TempDir()
	f, err := config.Parse("default.toml", []byte(config.Default()))
	if err != nil {
		t.Fatal(err)
	}
	f.Recorder.DumpDir = filepath.Join(dir, "dumps")
	f.Control.Socket = filepath.Join(dir, "edr.sock")
	if err := Check(f); err != nil {
		t.Fatalf("the default configuration: %v", err)
	}
	for _, c := range []struct {
		name string
		set  func(*config.File)
		keys []string
	}{
		{"http", func(f *config.File) { f.Control.HTTP = "127.0.0.1:0" }, []string{"control.http"}},
		{"http and token", func(f *config.File) { f.Control.HTTP, f.Control.HTTPToken = "127.0.0.1:0", "t" }, []string{"control.http"}},
		{"token", func(f *config.File) { f.Control.HTTPToken = "t" }, []string{"control.http_token"}},
		{"pprof", func(f *config.File) { f.Control.PProf = true }, []string{"control.pprof"}},
		{"http and pprof", func(f *config.File) { f.Control.HTTP, f.Control.PProf = ":0", true }, []string{"control.http", "control.pprof"}},
		{"live", func(f *config.File) { f.Live.Listen = "127.0.0.1:0" }, []string{"live.listen"}},
		{"live with token", func(f *config.File) { f.Live.Listen, f.Live.Token = "0.0.0.0:0", "t" }, []string{"live.listen"}},
		{"live token", func(f *config.File) { f.Live.Token = "t" }, []string{"live.token"}},
		{"live publish", func(f *config.File) { f.Live.ClientPublish = true }, []string{"live.client_publish"}},
		{"live triggers", func(f *config.File) { f.Live.TriggerTopics = []string{"mark"} }, []string{"live.trigger_topics"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := *f
			c.set(&g)
			var ps config.Errors
			if err := Check(&g); !errors.As(err, &ps) {
				t.Fatalf("Check: %v, want the refusal", err)
			}
			var keys []string
			for _, p := range ps {
				keys = append(keys, p.Key)
				if !strings.Contains(p.Msg, "not in this build of edr-lite (the ECU build, go build -tags ecu): the full build has it, and so does go build -tags ecu,http") {
					t.Errorf("%s: %q does not name the builds that have it", p.Key, p.Msg)
				}
			}
			if strings.Join(keys, " ") != strings.Join(c.keys, " ") {
				t.Errorf("problems at %v, want %v", keys, c.keys)
			}
		})
	}
}
