package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileConfigs is the corpus of #32.13: configurations a user or a
// broken deployment script writes, each either refused by both "config
// check" and "run" with its key named (key), or accepted by both (key "").
// $DIR is the case's directory, which holds broken.lua (a syntax error),
// good.lua (a rule), file (a regular file), adir/ and speed.layout.
var hostileConfigs = []struct {
	name, src, key string
}{
	// [recorder]
	{"cache zero", "[recorder]\ncache_size = \"0\"", "recorder.cache_size"},
	{"cache overflows", "[recorder]\ncache_size = \"8388608TiB\"", "recorder.cache_size"},
	{"cache negative", "[recorder]\ncache_size = -5", "recorder.cache_size"},
	{"cache two dots", "[recorder]\ncache_size = \"1.5.5MiB\"", "recorder.cache_size"},
	{"cache as a table", "[recorder]\ncache_size = { size = 1 }", "recorder.cache_size"},
	{"cache below one ring", "[recorder]\ncache_size = \"2MiB\"", "recorder.cache_size"},
	{"topic_bytes tiny", "[recorder]\ntopic_bytes = \"1KiB\"", "recorder.topic_bytes"},
	{"topic_bytes over the cache", "[recorder]\ntopic_bytes = \"1GiB\"", "recorder.cache_size"},
	{"max_packet zero", "[recorder]\nmax_packet = 0", "recorder.max_packet"},
	{"pre negative", "[recorder]\npre = \"-1s\"", "recorder.pre"},
	{"post without unit", "[recorder]\npost = 5", "recorder.post"},
	{"post word", "[recorder]\npost = \"2seconds\"", "recorder.post"},
	{"post bare word", "[recorder]\npost = 2seconds", "recorder.post"},
	{"guard garbage", "[recorder]\nguard = \"abc\"", "recorder.guard"},
	{"format bag", "[recorder]\nformat = \"bag\"", "recorder.format"},
	{"compression gzip", "[recorder]\ncompression = \"gzip\"", "recorder.compression"},
	{"coalesce both", "[recorder]\ncoalesce = \"both\"", "recorder.coalesce"},
	{"dump_mode unreadable by owner", "[recorder]\ndump_mode = \"0044\"", "recorder.dump_mode"},
	{"dump_mode words", "[recorder]\ndump_mode = \"rw-r-----\"", "recorder.dump_mode"},
	{"dump_group unknown", "[recorder]\ndump_group = \"nosuchgroup-edr\"", "recorder.dump_group"},
	{"dump_dir empty", "[recorder]\ndump_dir = \"\"", "recorder.dump_dir"},
	{"dump_dir under a file", "[recorder]\ndump_dir = \"$DIR/file/dumps\"", "recorder.dump_dir"},
	{"dump_dir in /proc", "[recorder]\ndump_dir = \"/proc/edr-dumps\"", "recorder.dump_dir"},
	{"include bad glob", "[recorder]\ninclude = [\"[\"]", "recorder.include"},
	{"include a string", "[recorder]\ninclude = \"camera/*\"", "recorder.include"},
	{"exclude numbers", "[recorder]\nexclude = [1, 2]", "recorder.exclude"},
	{"rate limit negative", "[recorder]\nmax_dumps_per_minute = -1", "recorder.max_dumps_per_minute"},
	{"manual rate limit negative", "[recorder]\nmax_manual_dumps_per_minute = -3", "recorder.max_manual_dumps_per_minute"},
	{"reorder without window", "[recorder]\nreorder = true\nreorder_window = \"0s\"", "recorder.reorder_window"},
	{"event window zero", "[recorder]\nevent_time_window = \"0s\"", "recorder.event_time_window"},
	{"event messages zero", "[recorder]\nevent_time_max_messages = 0", "recorder.event_time_max_messages"},
	{"event bytes zero", "[recorder]\nevent_time_max_bytes = 0", "recorder.event_time_max_bytes"},
	{"stop_deadline zero", "[recorder]\nstop_deadline = 0", "recorder.stop_deadline"},
	{"max_topics negative", "[recorder]\nmax_topics = -1", "recorder.max_topics"},
	{"max_topics a string", "[recorder]\nmax_topics = \"64\"", "recorder.max_topics"},
	{"frame size zero", "[recorder]\nframe_target_size = 0", "recorder.frame_target_size"},
	{"mlock a string", "[recorder]\nmlock = \"yes\"", "recorder.mlock"},
	{"recorder typo", "[recorder]\ncahce_size = \"64MiB\"", "recorder.cahce_size"},
	{"key of another table", "[recorder]\nmax_files = 3", "recorder.max_files"},
	{"recorder twice", "[recorder]\npre = \"1s\"\n[recorder]\npost = \"1s\"", "recorder"},
	{"key twice", "[recorder]\npre = \"1s\"\npre = \"2s\"", "recorder.pre"},
	{"unterminated string", "[recorder]\npre = \"1s", "recorder.pre"},
	{"recorder a number", "recorder = 5", "recorder"},
	{"unknown table", "[recordr]\npre = \"1s\"", "recordr"},
	// [rotation]
	{"max_files negative", "[rotation]\nmax_files = -1", "rotation.max_files"},
	{"max_files a word", "[rotation]\nmax_files = \"three\"", "rotation.max_files"},
	{"total bytes negative", "[rotation]\nmax_total_bytes = \"-1\"", "rotation.max_total_bytes"},
	{"free disk words", "[rotation]\nmin_free_disk = \"lots\"", "rotation.min_free_disk"},
	// [[topic]]
	{"topic without match", "[[topic]]\npre = \"1s\"", "topic[0].match"},
	{"topic bad glob", "[[topic]]\nmatch = \"cam[\"", "topic[0].match"},
	{"topic front and back", "[[topic]]\nmatch = \"a\"\nonly_front = true\nonly_back = true", "topic[0].only_back"},
	{"topic keep_last negative", "[[topic]]\nmatch = \"a\"\nkeep_last = -3", "topic[0].keep_last"},
	{"topic max_packet zero", "[[topic]]\nmatch = \"a\"\nmax_packet = 0", "topic[0].max_packet"},
	{"topic ring tiny", "[[topic]]\nmatch = \"a\"\nmax_bytes = \"1KiB\"", "topic[0].max_bytes"},
	{"topic ring over the cache", "[[topic]]\nmatch = \"a\"\nmax_bytes = \"1GiB\"", "topic[0].max_bytes"},
	{"topic pre garbage", "[[topic]]\nmatch = \"a\"\npre = \"x\"", "topic[0].pre"},
	{"topic bad layout", "[[topic]]\nmatch = \"a\"\nschema_name = \"A\"\nlayout = \"f33le x\"", "topic[0].layout"},
	{"topic protobuf without file", "[[topic]]\nmatch = \"a\"\nencoding = \"protobuf\"\nschema_name = \"a.B\"", "topic[0]"},
	{"topic schema file missing", "[[topic]]\nmatch = \"a\"\nencoding = \"protobuf\"\nschema_name = \"a.B\"\nschema_file = \"$DIR/none.binpb\"", "topic[0].schema_file"},
	{"topic event_time not a field", "[[topic]]\nmatch = \"a\"\nschema_name = \"A\"\nlayout = \"u64le stamp (ns)\"\nevent_time = \"nosuch\"", "topic[0].event_time"},
	{"topic event_time_unit", "[[topic]]\nmatch = \"a\"\nschema_name = \"A\"\nlayout = \"u64le stamp\"\nevent_time = \"stamp\"\nevent_time_unit = \"fortnights\"", "topic[0].event_time_unit"},
	{"topic as one table", "[topic]\nmatch = \"a\"", "topic"},
	{"topic typo", "[[topic]]\nmatch = \"a\"\nkeep_lats = 1", "topic[0].keep_lats"},
	// [[source.shm]]
	{"shm dir empty", "[[source.shm]]\ndir = \"\"", "source.shm[0].dir"},
	{"shm dir under a file", "[[source.shm]]\ndir = \"$DIR/file/shm\"", "source.shm[0].dir"},
	{"shm uid negative", "[[source.shm]]\ndir = \"$DIR/shm\"\nallow_uids = [-1]", "source.shm[0].allow_uids"},
	{"shm uids a string", "[[source.shm]]\ndir = \"$DIR/shm\"\nallow_uids = \"0\"", "source.shm[0].allow_uids"},
	{"shm heartbeat negative", "[[source.shm]]\ndir = \"$DIR/shm\"\nheartbeat_timeout = \"-5s\"", "source.shm[0].heartbeat_timeout"},
	// [[source.udp]]
	{"udp listen empty", "[[source.udp]]\nlisten = \"\"", "source.udp[0].listen"},
	{"udp no port", "[[source.udp]]\nlisten = \"127.0.0.1\"", "source.udp[0].listen"},
	{"udp port too large", "[[source.udp]]\nlisten = \"127.0.0.1:99999\"", "source.udp[0].listen"},
	{"udp address of no interface", "[[source.udp]]\nlisten = \"192.0.2.77:7000\"", "source.udp[0].listen"},
	{"udp group not multicast", "[[source.udp]]\nlisten = \":7000\"\ngroup = \"10.0.0.1\"", "source.udp[0].group"},
	{"udp group interface missing", "[[source.udp]]\nlisten = \":7000\"\ngroup = \"239.1.1.1\"\ninterface = \"nosuch0\"", "source.udp[0].interface"},
	{"udp interface without group", "[[source.udp]]\nlisten = \":7000\"\ninterface = \"lo\"", "source.udp[0].interface"},
	{"udp rcvbuf zero", "[[source.udp]]\nlisten = \":7000\"\nrcvbuf = 0", "source.udp[0].rcvbuf"},
	{"udp max_packet over 64K", "[[source.udp]]\nlisten = \":7000\"\nmax_packet = 70000", "source.udp[0]"},
	{"udp bad template", "[[source.udp]]\nlisten = \":7000\"\ntopic = \"udp/{port}\"", "source.udp[0]"},
	{"udp two on one topic", "[[source.udp]]\nlisten = \"127.0.0.1:0\"\ntopic = \"radar\"\n[[source.udp]]\nlisten = \"127.0.0.1:0\"\ntopic = \"radar\"", "source.udp[1].channel"},
	{"udp bad layout", "[[source.udp]]\nlisten = \"127.0.0.1:0\"\nschema_name = \"R\"\nlayout = \"u8 x; u8 x\"", "source.udp[0].layout"},
	{"udp listen a number", "[[source.udp]]\nlisten = 7000", "source.udp[0].listen"},
	// [[source.raw]]
	{"raw interface empty", "[[source.raw]]\ninterface = \"\"", "source.raw[0].interface"},
	{"raw interface missing", "[[source.raw]]\ninterface = \"nosuch0\"", "source.raw[0].interface"},
	{"raw payload ip", "[[source.raw]]\ninterface = \"lo\"\npayload = \"ip\"", "source.raw[0].payload"},
	{"raw ethertype over 16 bits", "[[source.raw]]\ninterface = \"lo\"\n[source.raw.filter]\nethertype = 70000", "source.raw[0].filter.ethertype"},
	{"raw ip_proto over 8 bits", "[[source.raw]]\ninterface = \"lo\"\n[source.raw.filter]\nip_proto = 300", "source.raw[0].filter.ip_proto"},
	{"raw vlan over 4094", "[[source.raw]]\ninterface = \"lo\"\n[source.raw.filter]\nvlan = 5000", "source.raw[0].filter.vlan"},
	{"raw port range backwards", "[[source.raw]]\ninterface = \"lo\"\n[source.raw.filter]\ndst_ports = [\"9-1\"]", "source.raw[0].filter"},
	{"raw multicast not an address", "[[source.raw]]\ninterface = \"lo\"\n[source.raw.filter]\nmulticast = \"not-an-ip\"", "source.raw[0].filter"},
	{"raw bad template", "[[source.raw]]\ninterface = \"lo\"\ntopic = \"{bad\"", "source.raw[0].topic"},
	// [[rule]]
	{"rule builtin typo", "[[rule]]\nbuiltin = \"hard_brak\"", "rule[0].builtin"},
	{"rule file and builtin", "[[rule]]\nbuiltin = \"hard_brake\"\nfile = \"$DIR/good.lua\"", "rule[0]"},
	{"rule neither", "[[rule]]\ntime = \"capture\"", "rule[0]"},
	{"rule file missing", "[[rule]]\nfile = \"$DIR/none.lua\"", "rule[0].file"},
	{"rule file a directory", "[[rule]]\nfile = \"$DIR/adir\"", "rule[0].file"},
	{"rule syntax error", "[[rule]]\nfile = \"$DIR/broken.lua\"", "rule[0].file"},
	{"rule param typo", "[[rule]]\nbuiltin = \"hard_brake\"\nparams = { topik = \"x\" }", "rule[0].params.topik"},
	{"rule param not a number", "[[rule]]\nbuiltin = \"hard_brake\"\nparams = { decel = \"fast\" }", "rule[0].params.decel"},
	{"rule param an array", "[[rule]]\nbuiltin = \"hard_brake\"\nparams = { decel = [6] }", "rule[0].params.decel"},
	{"rule time wall", "[[rule]]\nbuiltin = \"hard_brake\"\ntime = \"wall\"", "rule[0].time"},
	{"rule budget negative", "[[rule]]\nbuiltin = \"manual\"\ninstructions = -1", "rule[0].instructions"},
	{"rule twice", "[[rule]]\nbuiltin = \"threshold\"\n[[rule]]\nbuiltin = \"threshold\"", "rule[1].name"},
	{"rule name and params.name", "[[rule]]\nbuiltin = \"threshold\"\nname = \"a\"\nparams = { name = \"b\" }", "rule[0].name"},
	{"rule typo", "[[rule]]\nbuiltin = \"threshold\"\nnmae = \"a\"", "rule[0].nmae"},
	{"rule event time without field", "[[rule]]\nbuiltin = \"manual\"\ntime = \"event\"", "rule[0].builtin"},
	{"rules beyond the limit", manyRules(1025), "rule[1024]"},
	{"a flood of unknown keys", "[recorder]\n" + strings.Repeat("cache_sizx = 1\n[[topic]]\nmatch = \"a\"\nkeep_lats = 1\n", 3000), "recorder.cache_sizx"},
	// [control]
	{"socket directory missing", "[control]\nsocket = \"$DIR/no/such/edr.sock\"", "control.socket"},
	{"socket path too long", "[control]\nsocket = \"$DIR/" + strings.Repeat("s", 110) + ".sock\"", "control.socket"},
	{"socket is a file", "[control]\nsocket = \"$DIR/file\"", "control.socket"},
	{"http no port", "[control]\nsocket = \"\"\nhttp = \"localhost\"", "control.http"},
	{"http port too large", "[control]\nsocket = \"\"\nhttp = \"127.0.0.1:99999\"", "control.http"},
	{"http address of no interface", "[control]\nsocket = \"\"\nhttp = \"192.0.2.77:9464\"", "control.http"},
	{"pprof a string", "[control]\nsocket = \"\"\npprof = \"on\"", "control.pprof"},
	// [hooks]
	{"hook missing", "[hooks]\nexec = [\"/nonexistent/upload\"]", "hooks.exec"},
	{"hook a directory", "[hooks]\nexec = [\"$DIR/adir\"]", "hooks.exec"},
	{"hook a string", "[hooks]\nexec = \"true\"", "hooks.exec"},
	{"hook timeout zero", "[hooks]\nexec = [\"true\"]\ntimeout = 0", "hooks.timeout"},
	// [upload]
	{"upload bucket without endpoint", "[upload]\nbucket = \"b\"", "upload"},
	{"upload typo", "[upload]\nendpiont = \"http://127.0.0.1:1\"", "upload.endpiont"},
	{"upload part size a word", "[upload]\npart_size = \"big\"", "upload.part_size"},
	{"upload window midnight to midnight", "[upload]\nendpoint = \"http://127.0.0.1:1\"\nbucket = \"b\"\naccess_key = \"a\"\nsecret_key = \"s\"\nwindow = \"24:00-00:00\"", "upload.window"},

	// accepted by both
	{"minimal", "", ""},
	{"the defaults", "@default", ""},
	{"numeric params and names", "[[rule]]\nbuiltin = \"threshold\"\nparams = { topic = \"a\", offset = 0, high = 300.0 }\n[[rule]]\nbuiltin = \"threshold\"\nname = \"b_limit\"\nparams = { topic = \"b\", high = 7000, direction = \"above\" }\n[[rule]]\nbuiltin = \"hard_brake\"\nparams = { decel = 6.5, name = \"brake\" }", ""},
	{"rule file", "[[rule]]\nfile = \"$DIR/good.lua\"", ""},
	{"sources", "[[source.shm]]\ndir = \"$DIR/shm\"\nallow_uids = [0, 1000]\n[[source.udp]]\nlisten = \"127.0.0.1:0\"\ntopic = \"radar\"\nschema_name = \"R\"\nlayout = \"u8 x\"\n[[source.udp]]\nlisten = \"127.0.0.1:0\"\ntopic = \"radar\"\nchannel = \"b\"", ""},
	{"raw source", "[[source.raw]]\ninterface = \"lo\"\npayload = \"udp\"\ntopic = \"udp/{dport}\"\n[source.raw.filter]\nethertype = 0x0800\nip_proto = 17\ndst_ports = [\"30490-30500\"]", ""},
	{"topics", "[[topic]]\nmatch = \"camera/*\"\npre = \"5s\"\npost = \"0s\"\nmax_bytes = \"8MiB\"\n[[topic]]\nmatch = \"vehicle/speed\"\nschema_name = \"S\"\nlayout = \"u64le stamp (ns); f32le v\"\nevent_time = \"stamp\"\n[[topic]]\nmatch = \"cal\"\nkeep_last = 1", ""},
	{"zero windows", "[recorder]\npre = 0\npost = \"0s\"", ""},
	{"long windows", "[recorder]\npre = \"100000h\"", ""},
	{"mcap zstd separate", "[recorder]\nformat = \"mcap\"\ncompression = \"zstd\"\ncoalesce = \"separate\"\ndump_mode = \"0600\"\ndump_group = \"0\"", ""},
	{"http with a token", "[control]\nsocket = \"$DIR/edr.sock\"\nhttp = \"127.0.0.1:0\"\nhttp_token = \"t\"\npprof = true", ""},
	{"no control socket", "[control]\nsocket = \"\"", ""},
	{"hook", "[hooks]\nexec = [\"true\"]\ntimeout = \"10s\"", ""},
	{"rotation", "[rotation]\nmax_files = 0\nmax_total_bytes = \"1GiB\"\nmin_free_disk = 0", ""},
	{"reorder", "[recorder]\nreorder = true\nreorder_window = \"50ms\"\nmax_topics = 16", ""},
}

// manyRules is n [[rule]] tables of the manual rule, each named apart.
func manyRules(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("[[rule]]\nbuiltin = \"manual\"\nname = \"m" + strconv.Itoa(i) + "\"\n")
	}
	return b.String()
}

// reProblemLine is a problem as config check and run print it; the key
// must be a configuration key ("source.udp[1].listen", "recorder").
var reProblemLine = regexp.MustCompile(`^(.*?):(\d+): ([a-z_]+(?:\[\d+\])?(?:\.[a-z_]+(?:\[\d+\])?)*): `)

// corpusConfig is a case's file: the case's tables, with a writable dump
// directory, a cache of 16MiB and a control socket in dir unless the case
// sets them.
func corpusConfig(t *testing.T, dir, src string) string {
	if src == "@default" {
		_, def, _ := runBin(t, "config", "init")
		def = strings.Replace(def, `dump_dir = "/var/lib/edr-lite/dumps"`, `dump_dir = "$DIR/dumps"`, 1)
		def = strings.Replace(def, `socket = "/run/edr-lite.sock"`, `socket = "$DIR/edr.sock"`, 1)
		return strings.ReplaceAll(def, "$DIR", dir)
	}
	rec := "dump_dir = \"$DIR/dumps\"\ncache_size = \"16MiB\"\n"
	if strings.Contains(src, "dump_dir =") {
		rec = "cache_size = \"16MiB\"\n"
	}
	if strings.Contains(src, "cache_size =") || strings.Contains(src, "cahce_size") {
		rec = strings.Replace(rec, "cache_size = \"16MiB\"\n", "", 1)
	}
	ctl := "socket = \"$DIR/edr.sock\"\n"
	if strings.Contains(src, "socket =") {
		ctl = ""
	}
	out := src + "\n"
	switch {
	case strings.HasPrefix(src, "recorder = "):
	case strings.Contains(src, "[recorder]\n"):
		out = strings.Replace(out, "[recorder]\n", "[recorder]\n"+rec, 1)
	default:
		out = "[recorder]\n" + rec + out
	}
	if strings.Contains(out, "[control]\n") {
		out = strings.Replace(out, "[control]\n", "[control]\n"+ctl, 1)
	} else {
		out += "[control]\n" + ctl
	}
	// keep line numbers of the case readable: nothing else is added
	return strings.ReplaceAll(out, "$DIR", dir)
}

// problemLines returns the FILE:LINE lines of stderr and fails the test
// for one that does not name a key.
func problemLines(t *testing.T, path, stderr string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if !regexp.MustCompile(`^` + regexp.QuoteMeta(path) + `:\d+:`).MatchString(l) {
			continue // not FILE:LINE (a count of problems not shown)
		}
		if m := reProblemLine.FindStringSubmatch(l); m != nil && strings.HasPrefix(l[len(m[0]):], "warning: ") {
			continue // run logs its warnings
		}
		if m := reProblemLine.FindStringSubmatch(l); m == nil || m[1] != path || m[2] == "0" {
			t.Errorf("a problem without its line and key: %s", l)
		}
		out = append(out, l)
	}
	return out
}

// TestE2EConfigCheckIsRunCorpus (#32.13): of every configuration of the
// corpus, none passes config check and then fails at run; each refused one
// is refused by both with the same problems, each at a line and naming a
// key, the case's among them; each accepted one starts recording and stops
// cleanly.
func TestE2EConfigCheckIsRunCorpus(t *testing.T) {
	bin := edrBinary(t)
	if n := len(hostileConfigs); n < 80 {
		t.Fatalf("the corpus holds %d configurations, want at least 80", n)
	}
	for _, c := range hostileConfigs {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "broken.lua"), []byte("rule { name = \"x\"\nthis is not lua"), 0o644)
			os.WriteFile(filepath.Join(dir, "good.lua"), []byte("rule{name='good', topics='a'}\nfunction on_message(m) end\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
			os.Mkdir(filepath.Join(dir, "adir"), 0o755)
			path := filepath.Join(dir, "edr.toml")
			src := corpusConfig(t, dir, c.src)
			os.WriteFile(path, []byte(src), 0o600)
			code, _, checkErr := runBin(t, "config", "check", path)
			if c.key == "" {
				if code != 0 {
					t.Fatalf("config check refuses an accepted configuration: exit %d\n%s\n%s", code, checkErr, src)
				}
				runAccepted(t, bin, path, src)
				return
			}
			cp := problemLines(t, path, checkErr)
			if code != 1 || len(cp) == 0 {
				t.Fatalf("config check: exit %d, %d problems, want it refused at %s\n%s\n%s", code, len(cp), c.key, checkErr, src)
			}
			named := false
			for _, l := range cp {
				k := reProblemLine.FindStringSubmatch(l)
				if k != nil && (k[3] == c.key || strings.HasPrefix(k[3], c.key+".") || strings.HasPrefix(k[3], c.key+"[")) {
					named = true
				}
			}
			if !named {
				t.Errorf("config check does not name %s:\n%s", c.key, checkErr)
			}
			code, _, runErr := runBin(t, "run", "--config", path)
			rp := problemLines(t, path, runErr)
			if code != 1 || strings.Join(rp, "\n") != strings.Join(cp, "\n") {
				t.Errorf("run: exit %d, says\n%s\nconfig check says\n%s\n%s", code, runErr, checkErr, src)
			}
		})
	}
}

// runAccepted runs the recorder on path until it records, then stops it:
// it must neither fail at start nor at stop.
func runAccepted(t *testing.T, bin, path, src string) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--config", path)
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(20 * time.Second)
	for !strings.Contains(logs.String(), "msg=recording") {
		select {
		case err := <-done:
			t.Fatalf("run exited at start (%v), config check accepted it:\n%s\n%s", err, logs.String(), src)
		case <-deadline:
			cmd.Process.Kill()
			<-done
			t.Fatalf("run did not start recording:\n%s", logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run stopped with %v:\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Errorf("run did not stop on SIGTERM")
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("run logged an error:\n%s", logs.String())
	}
}
