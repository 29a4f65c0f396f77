package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/internal/config"
)

// badConfigs are configurations "edr-lite config check" used to pass and
// "edr-lite run" then rejected (or ran differently from what they say).
// Each maps to the key its problem must name. %[1]s is a temporary
// directory.
var badConfigs = []struct {
	name, src, key string
}{
	{"bad include glob", "[recorder]\ninclude = [\"[\"]\n", "recorder.include"},
	{"bad exclude glob", "[recorder]\nexclude = [\"a\", \"cam[\"]\n", "recorder.exclude"},
	{"bad topic glob", "[[topic]]\nmatch = \"[x\"\n", "topic[0].match"},
	{"only_front and only_back", "[[topic]]\nmatch = \"a\"\nonly_front = true\nonly_back = true\n", "topic[0].only_back"},
	{"reorder without window", "[recorder]\nreorder = true\nreorder_window = \"0s\"\n", "recorder.reorder_window"},
	{"udp group without port", "[[source.udp]]\nlisten = \"239.1.1.1\"\ngroup = \"239.1.1.1\"\n", "source.udp[0].listen"},
	{"udp listen without port", "[[source.udp]]\nlisten = \"0.0.0.0\"\n", "source.udp[0].listen"},
	{"udp group not multicast", "[[source.udp]]\nlisten = \":7000\"\ngroup = \"10.0.0.1\"\n", "source.udp[0].group"},
	{"udp max_packet too large", "[[source.udp]]\nlisten = \":7000\"\nmax_packet = 70000\n", "source.udp[0]"},
	{"udp bad template", "[[source.udp]]\nlisten = \":7000\"\ntopic = \"udp/{port}\"\n", "source.udp[0]"},
	{"udp rcvbuf zero", "[[source.udp]]\nlisten = \":7000\"\nrcvbuf = 0\n", "source.udp[0].rcvbuf"},
	{"udp missing interface", "[[source.udp]]\nlisten = \":7000\"\ngroup = \"239.1.1.1\"\ninterface = \"nosuch0\"\n", "source.udp[0].interface"},
	{"two udp sources, one topic", "[[source.udp]]\nlisten = \":7000\"\ntopic = \"radar\"\n[[source.udp]]\nlisten = \":7001\"\ntopic = \"radar\"\n", "source.udp[1].channel"},
	{"raw missing interface", "[[source.raw]]\ninterface = \"nosuch0\"\n", "source.raw[0].interface"},
	{"raw bad port range", "[[source.raw]]\ninterface = \"lo\"\n[source.raw.filter]\ndst_ports = [\"9-1\"]\n", "source.raw[0].filter"},
	{"unknown builtin", "[[rule]]\nbuiltin = \"hard_brak\"\n", "rule[0].builtin"},
	{"unknown rule param", "[[rule]]\nbuiltin = \"hard_brake\"\nparams = { topik = \"vehicle/speed\" }\n", "rule[0].params.topik"},
	{"bad rule param value", "[[rule]]\nbuiltin = \"hard_brake\"\n[rule.params]\ndecel = \"lots\"\n", "rule[0].params.decel"},
	{"missing rule file", "[[rule]]\nfile = \"%[1]s/missing.lua\"\n", "rule[0].file"},
	{"rule file syntax error", "[[rule]]\nfile = \"%[1]s/broken.lua\"\n", "rule[0].file"},
	{"two rules, one name", "[[rule]]\nbuiltin = \"hard_brake\"\n[[rule]]\nbuiltin = \"hard_brake\"\n", "rule[1]"},
	{"rule time", "[[rule]]\nbuiltin = \"hard_brake\"\ntime = \"wall\"\n", "rule[0].time"},
	{"cache smaller than a ring", "[recorder]\ncache_size = \"1MiB\"\n", "recorder.cache_size"},
	{"topic ring larger than the cache", "[recorder]\ncache_size = \"8MiB\"\n[[topic]]\nmatch = \"cam\"\nmax_bytes = \"16MiB\"\n", "topic[0].max_bytes"},
	{"topic_bytes zero", "[recorder]\ntopic_bytes = 0\n", "recorder.topic_bytes"},
	{"frame_target_size zero", "[recorder]\nframe_target_size = 0\n", "recorder.frame_target_size"},
	{"stop_deadline zero", "[recorder]\nstop_deadline = \"0s\"\n", "recorder.stop_deadline"},
	{"hook timeout zero", "[hooks]\nexec = [\"true\"]\ntimeout = 0\n", "hooks.timeout"},
	{"hook command missing", "[hooks]\nexec = [\"/nonexistent/upload\"]\n", "hooks.exec"},
	{"control socket directory missing", "[control]\nsocket = \"%[1]s/no/such/dir/edr.sock\"\n", "control.socket"},
	{"http address without port", "[control]\nhttp = \"localhost\"\n", "control.http"},
	{"dump_dir under a file", "[recorder]\ndump_dir = \"%[1]s/file/dumps\"\n", "recorder.dump_dir"},
	{"shm dir under a file", "[[source.shm]]\ndir = \"%[1]s/file/shm\"\n", "source.shm[0].dir"},
	// #32.13: passed the check, then failed at run
	{"unknown dump group", "[recorder]\ndump_group = \"nosuchgroup-edr\"\n", "recorder.dump_group"},
	{"control socket path too long", "[control]\nsocket = \"%[1]s/" + strings.Repeat("s", 110) + ".sock\"\n", "control.socket"},
	{"control socket is a file", "[control]\nsocket = \"%[1]s/file\"\n", "control.socket"},
	{"http on an address of no interface", "[control]\nhttp = \"192.0.2.77:9464\"\n", "control.http"},
	{"udp on an address of no interface", "[[source.udp]]\nlisten = \"192.0.2.77:7000\"\n", "source.udp[0].listen"},
	// #32.13: accepted by both, and cut to fewer bits
	{"raw ethertype over 16 bits", "[[source.raw]]\ninterface = \"lo\"\n[source.raw.filter]\nethertype = 70000\n", "source.raw[0].filter.ethertype"},
	{"raw ip_proto over 8 bits", "[[source.raw]]\ninterface = \"lo\"\n[source.raw.filter]\nip_proto = 300\n", "source.raw[0].filter.ip_proto"},
	{"negative uid", "[[source.shm]]\ndir = \"%[1]s/shm\"\nallow_uids = [-1]\n", "source.shm[0].allow_uids"},
	{"negative max_topics", "[recorder]\nmax_topics = -1\n", "recorder.max_topics"},
}

// baseConfig is what every case adds to: a writable dump directory and no
// control socket (unless the case sets them), so only the case's problem
// can fail.
func baseConfig(dir, src string) string {
	var b strings.Builder
	b.WriteString("[recorder]\n")
	if !strings.Contains(src, "dump_dir") {
		fmt.Fprintf(&b, "dump_dir = %q\n", filepath.Join(dir, "dumps"))
	}
	b.WriteString("[control]\n")
	if !strings.Contains(src, "socket =") {
		b.WriteString("socket = \"\"\n")
	}
	return b.String()
}

// TestCheckIsRun: for each configuration "run" rejects, the check ("config
// check") rejects it too, naming the key and its line; and "run" (New)
// fails with the same problem, not later or another one.
func TestCheckIsRun(t *testing.T) {
	for _, c := range badConfigs {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "broken.lua"), "rule { name = \"x\"\nthis is not lua")
			writeFile(t, filepath.Join(dir, "file"), "")
			src := strings.ReplaceAll(c.src, "%[1]s", dir)
			src = merge(baseConfig(dir, src), src)
			path := filepath.Join(dir, "edr.toml")
			writeFile(t, path, src)
			_, checkErr := Load(path)
			var ps config.Errors
			if !errors.As(checkErr, &ps) || len(ps) == 0 {
				t.Fatalf("check passed (%v):\n%s", checkErr, src)
			}
			found := false
			for _, p := range ps {
				if p.Key == c.key || strings.HasPrefix(p.Key, c.key+".") {
					found = true
					if p.Line == 0 || p.File != path {
						t.Errorf("problem %q has no line in %s", p, path)
					}
				}
			}
			if !found {
				t.Errorf("check: %v; want a problem at %s", checkErr, c.key)
			}
			// run: the file as the daemon gets it (parsed, not checked),
			// then New. A problem of the file itself stops the parse, in
			// both.
			f, err := config.Load(path)
			if err != nil {
				var parsePs config.Errors
				errors.As(err, &parsePs)
				for _, p := range parsePs {
					if !strings.Contains(checkErr.Error(), p.Error()) {
						t.Errorf("the parse says %q, which check does not", p)
					}
				}
				return
			}
			d, runErr := New(Options{Config: f})
			if runErr == nil {
				d.Stop()
				t.Fatalf("run accepted what check rejects: %v", checkErr)
			}
			if runErr.Error() != checkErr.Error() {
				t.Errorf("run says\n%v\ncheck says\n%v", runErr, checkErr)
			}
		})
	}
}

// merge puts the case's TOML after the base, folding a [recorder] or
// [control] table the case repeats into the base's.
func merge(base, add string) string {
	for _, tbl := range []string{"[recorder]\n", "[control]\n", "[hooks]\n"} {
		if strings.HasPrefix(add, tbl) && strings.Contains(base, tbl) {
			body, rest, _ := strings.Cut(strings.TrimPrefix(add, tbl), "\n[")
			if rest != "" {
				rest = "[" + rest
			}
			base = strings.Replace(base, tbl, tbl+body+"\n", 1)
			add = rest
		}
	}
	return base + add
}

// TestCheckReportsEveryProblem: every problem of a file is reported, in
// line order, each with its line.
func TestCheckReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "edr.toml")
	writeFile(t, path, merge(baseConfig(dir, ""), `[[topic]]
match = "["
[[rule]]
builtin = "hard_brak"
[[rule]]
builtin = "hard_brake"
params = { topik = "x" }
`))
	_, err := Load(path)
	var ps config.Errors
	if !errors.As(err, &ps) || len(ps) != 3 {
		t.Fatalf("Load: %v, want 3 problems", err)
	}
	want := []struct {
		line int
		key  string
	}{{6, "topic[0].match"}, {8, "rule[0].builtin"}, {11, "rule[1].params.topik"}}
	for i, w := range want {
		if ps[i].Line != w.line || ps[i].Key != w.key {
			t.Errorf("problem %d: %q, want line %d key %s", i, ps[i], w.line, w.key)
		}
	}
	if !strings.Contains(ps[2].Msg, `did you mean "topic"`) || !strings.Contains(ps[1].Msg, `did you mean "hard_brake"`) || !strings.Contains(ps[0].Error(), path+":6: topic[0].match: ") {
		t.Errorf("problems: %v", err)
	}
}

// TestCheckPassesWhatRunAccepts: the default configuration passes the
// check (the demo's: TestCheckPassesTheDemo).
func TestCheckPassesWhatRunAccepts(t *testing.T) {
	dir := t.TempDir()
	f, err := config.Parse("default.toml", []byte(config.Default()))
	if err != nil {
		t.Fatal(err)
	}
	f.Recorder.DumpDir = filepath.Join(dir, "dumps")
	f.Control.Socket = filepath.Join(dir, "edr.sock")
	if err := Check(f); err != nil {
		t.Errorf("the default configuration: %v", err)
	}
	if _, err := os.Stat(f.Recorder.DumpDir); err == nil {
		t.Error("Check created the dump directory: it must have no side effects")
	}
}
