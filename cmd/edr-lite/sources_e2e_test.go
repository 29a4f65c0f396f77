package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// sourceHealth is a source of "status --json".
type sourceHealth struct {
	Kind      string `json:"kind"`
	Key       string `json:"key"`
	Name      string `json:"name"`
	Receiving bool   `json:"receiving"`
	Cause     string `json:"cause"`
	Why       string `json:"why"`
}

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// walkKeys calls f with the path of every object key of a JSON document.
func walkKeys(v any, path string, f func(path, key string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			f(path+"."+k, k)
			walkKeys(e, path+"."+k, f)
		}
	case []any:
		for _, e := range v {
			walkKeys(e, path+"[]", f)
		}
	}
}

// TestE2ESourceNeverSilent (#30.9, #30.10, #32.14): a shared-memory
// source whose directory does not exist and a UDP source nothing reaches:
// config check warns (exit 0) about the directory and about HTTP without a
// token; run logs the same; status (text and JSON) and /metrics show both
// sources as not receiving with the reason, until data arrives. The JSON
// document, a rule's object included, is snake_case throughout, and the
// start log lists /debug/pprof/ only when pprof is on.
func TestE2ESourceNeverSilent(t *testing.T) {
	udp := freeUDPAddr(t)
	cfg := `
[recorder]
dump_dir = "$DIR/dumps"
cache_size = "8MiB"
[rotation]
min_free_disk = 0
[[source.shm]]
dir = "$DIR/nowhere/shm"
[[source.udp]]
listen = "` + udp + `"
topic = "radar"
[[rule]]
builtin = "threshold"
params = { topic = "radar", high = 300.0 }
[control]
socket = "$DIR/edr.sock"
http = "127.0.0.1:0"
`
	path, dir := writeConfig(t, cfg)
	code, out, errs := runBin(t, "config", "check", path)
	shmDir := filepath.Join(dir, "nowhere", "shm")
	for _, want := range []string{
		path + ":8: source.shm[0].dir: warning: " + shmDir + " does not exist: run creates it",
		path + ":17: control.http: warning: without control.http_token, /status and /metrics answer any local user",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("config check does not warn %q:\n%s", want, errs)
		}
	}
	if code != 0 || !strings.Contains(out, "3 warnings") { // the third: signing is off
		t.Errorf("config check: exit %d, want 0 and 3 warnings counted\n%s", code, out)
	}

	d := startDaemon(t, cfg, nil, nil)
	shmDir = filepath.Join(d.dir, "nowhere", "shm")
	logs := d.logs.String()
	for _, want := range []string{"source.shm[0].dir: " + shmDir + " does not exist", "control.http: without control.http_token"} {
		if !strings.Contains(logs, want) {
			t.Errorf("run does not log %q:\n%s", want, logs)
		}
	}
	addr := d.httpAddr(t)
	if strings.Contains(d.logs.String(), "/debug/pprof/") {
		t.Errorf("the start log lists /debug/pprof/ with pprof off:\n%s", grepLines(d.logs.String(), "paths="))
	}
	sources := func() (map[string]sourceHealth, string) {
		_, js, _ := runBin(t, "status", "--socket", d.sock, "--json")
		var st struct {
			Sources []sourceHealth `json:"sources"`
		}
		if err := json.Unmarshal([]byte(js), &st); err != nil {
			t.Fatalf("status --json: %v\n%s", err, js)
		}
		m := map[string]sourceHealth{}
		for _, s := range st.Sources {
			m[s.Kind] = s
		}
		return m, js
	}
	src, _ := sources()
	if s := src["shm"]; s.Receiving || s.Cause != "no_segment" || !strings.Contains(s.Why, "no producer's segment in "+shmDir) || s.Key != "source.shm[0]" {
		t.Errorf("shm source %+v, want not receiving: no segment", s)
	}
	if s := src["udp"]; s.Receiving || s.Cause != "no_data" || !strings.Contains(s.Why, "nothing received on "+udp) {
		t.Errorf("udp source %+v, want not receiving: no data", s)
	}
	_, text, _ := runBin(t, "status", "--socket", d.sock)
	if !strings.Contains(text, "  NOT RECEIVING (no_segment): no producer's segment in "+shmDir) || !strings.Contains(text, "  NOT RECEIVING (no_data): nothing received on "+udp) {
		t.Errorf("status text does not show the sources not receiving:\n%s", text)
	}
	metrics := httpGet(t, "http://"+addr+"/metrics")
	for _, want := range []string{`edr_source_receiving{cause="no_segment",kind="shm",source="` + shmDir + `"} 0`,
		`edr_source_receiving{cause="no_data",kind="udp",source="` + udp + `"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(metrics, "edr_source_receiving"))
		}
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	publishUntil(t, shmDir, "sensor/a", stop, &wg)
	c, err := net.Dial("udp", udp)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var js string
	waitFor(t, func() bool {
		c.Write([]byte{1, 2, 3, 4})
		var src map[string]sourceHealth
		src, js = sources()
		return src["shm"].Receiving && src["udp"].Receiving && src["shm"].Why == "" && src["udp"].Cause == ""
	}, "both sources receiving")
	var doc any
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	walkKeys(doc, "", func(p, k string) {
		n++
		if !snakeKey.MatchString(k) {
			t.Errorf("status --json key %s is not snake_case", p)
		}
	})
	if !strings.Contains(js, `"lag_ns"`) || !strings.Contains(js, `"triggers_fired"`) || n < 50 {
		t.Errorf("status --json has no rule object (%d keys):\n%s", n, js)
	}
}

// TestE2EUDPSourceThatCannotBind (#30.9): a UDP listen address that is on
// no interface of this host is refused by config check as run refuses it,
// naming the key; a port another process holds is warned about by config
// check (exit 0) and refused by run.
func TestE2EUDPSourceThatCannotBind(t *testing.T) {
	path, _ := writeConfig(t, "[recorder]\ndump_dir = \"$DIR/dumps\"\n[control]\nsocket = \"\"\n[[source.udp]]\nlisten = \"192.0.2.77:30490\"\n")
	for _, verb := range [][]string{{"config", "check", path}, {"run", "--config", path}} {
		code, _, errs := runBin(t, verb...)
		if want := path + ":6: source.udp[0].listen: 192.0.2.77:30490: "; code != 1 || !strings.Contains(errs, want) || !strings.Contains(errs, "cannot assign requested address") {
			t.Errorf("%s: exit %d\n%s\nwant exit 1 with %q", verb[0], code, errs, want)
		}
	}
	held, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.LocalAddr().String()
	path, _ = writeConfig(t, "[recorder]\ndump_dir = \"$DIR/dumps\"\n[control]\nsocket = \"\"\n[[source.udp]]\nlisten = \""+addr+"\"\n")
	code, _, errs := runBin(t, "config", "check", path)
	if want := path + ":6: source.udp[0].listen: warning: " + addr + " is in use now by another process"; code != 0 || !strings.Contains(errs, want) {
		t.Errorf("config check of a port in use: exit %d\n%s\nwant exit 0 with %q", code, errs, want)
	}
	if code, _, errs := runBin(t, "run", "--config", path); code != 1 || !strings.Contains(errs, "address already in use") {
		t.Errorf("run on a port in use: exit %d\n%s", code, errs)
	}
}

// TestE2ERawSourceWithoutCapability (#30.9): as a user without
// CAP_NET_RAW, config check refuses a raw source as run does, saying what
// it needs. Needs root (to run the binary as nobody).
func TestE2ERawSourceWithoutCapability(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the check as another user")
	}
	bin := edrBinary(t)
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(bin, 0o755)
	dumps := filepath.Join(dir, "dumps")
	os.Mkdir(dumps, 0o777)
	os.Chmod(dumps, 0o777)
	path := filepath.Join(dir, "edr.toml")
	os.WriteFile(path, []byte("[recorder]\ndump_dir = \""+dumps+"\"\n[control]\nsocket = \"\"\n[[source.raw]]\ninterface = \"lo\"\n"), 0o644)
	for _, verb := range [][]string{{"config", "check", path}, {"run", "--config", path}} {
		cmd := exec.Command(bin, verb...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var errb strings.Builder
		cmd.Stderr = &errb
		err := cmd.Run()
		ee, _ := err.(*exec.ExitError)
		if ee == nil || ee.ExitCode() != 1 {
			t.Errorf("%s as nobody: %v\n%s", verb[0], err, errb.String())
			continue
		}
		if verb[0] == "config" && !strings.Contains(errb.String(), path+":5: source.raw[0]: ") || !strings.Contains(errb.String(), "operation not permitted") {
			t.Errorf("%s as nobody:\n%s\nwant source.raw[0] refused for want of CAP_NET_RAW", verb[0], errb.String())
		}
		if verb[0] == "config" && !strings.Contains(errb.String(), "needs CAP_NET_RAW") {
			t.Errorf("config check does not say what a raw capture needs:\n%s", errb.String())
		}
	}
}
