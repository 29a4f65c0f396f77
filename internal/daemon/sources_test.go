package daemon

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/capture"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/shm"
)

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// TestStatusTypesSnakeCase (#30.10): every field of the status document,
// in every nested type (the rules' scripts.RuleStatus, the upload queue's
// upload.Status), is named in snake_case by its json tag; none falls back
// to its Go name ("Name", "LagNs").
func TestStatusTypesSnakeCase(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(path string, ty reflect.Type)
	walk = func(path string, ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			if !f.IsExported() {
				continue
			}
			tag, ok := f.Tag.Lookup("json")
			name, _, _ := strings.Cut(tag, ",")
			switch {
			case name == "-":
			case !ok && f.Anonymous:
				walk(path, f.Type) // its fields are the outer object's
			case !snakeCase.MatchString(name):
				t.Errorf("%s.%s is %q in JSON, want a snake_case name", path, f.Name, name)
			default:
				walk(path+"."+name, f.Type)
			}
		}
	}
	walk("status", reflect.TypeFor[Status]())
}

// jsonKeys returns every object key of a JSON document, with its path.
func jsonKeys(v any, path string, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			out[path+"."+k] = k
			jsonKeys(e, path+"."+k, out)
		}
	case []any:
		for _, e := range v {
			jsonKeys(e, path+"[]", out)
		}
	}
}

// TestSourcesNotReceiving (#30.9): a shared-memory source whose directory
// holds no segment and a UDP source nothing is sent to show as not
// receiving, with the cause and why, in status and /metrics, and are
// logged once SourceSilentAfter has passed; they show as receiving, and
// are logged so, once data arrives. The status document (rules included)
// is snake_case throughout.
func TestSourcesNotReceiving(t *testing.T) {
	defer func(a, e time.Duration) { SourceSilentAfter, sourceCheckEvery = a, e }(SourceSilentAfter, sourceCheckEvery)
	SourceSilentAfter, sourceCheckEvery = 0, 20*time.Millisecond
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.Hooks.Exec = nil
	shmDir := filepath.Join(dir, "later", "shm")
	cfg.Sources.SHM = []config.SHMSource{{Dir: shmDir}}
	udp := freeUDP(t)
	cfg.Sources.UDP = []config.UDPSource{{Listen: udp, Topic: "radar"}}
	warns, want := Warnings(cfg), 2
	if HTTPBuilt { // and HTTP without a token (the ECU build has no HTTP listener)
		want = 3
	}
	if len(warns) != want || warns[0].Key != "source.shm[0].dir" || !strings.Contains(warns[0].Msg, "does not exist") ||
		HTTPBuilt && (warns[1].Key != "control.http" || !strings.Contains(warns[1].Msg, "any local user")) ||
		warns[want-1].Key != "recorder.dump_dir" || !strings.Contains(warns[want-1].Msg, "signing is off") {
		t.Errorf("warnings %v, want the missing shm directory, HTTP without a token (full build), signing off", warns)
	}
	var logs syncBuffer
	d, err := New(Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		d.Stop()
		t.Fatal(err)
	}
	defer d.Stop()
	if !strings.Contains(logs.String(), "configuration: test: source.shm[0].dir: "+shmDir+" does not exist") {
		t.Errorf("run does not log the warning:\n%s", logs.String())
	}
	st := d.Status()
	if len(st.Sources) != 2 {
		t.Fatalf("sources %+v", st.Sources)
	}
	if s := st.Sources[0]; s.Receiving || s.Cause != CauseNoSegment || !strings.Contains(s.Why, "no producer's segment in "+shmDir) || s.Key != "source.shm[0]" {
		t.Errorf("shm source %+v, want not receiving: no segment", s)
	}
	if s := st.Sources[1]; s.Receiving || s.Cause != CauseNoData || !strings.Contains(s.Why, "nothing received on "+udp) || s.Key != "source.udp[0]" {
		t.Errorf("udp source %+v, want not receiving: no data", s)
	}
	metrics := httpGetDaemon(t, d, "/metrics")
	for _, want := range []string{
		`edr_source_receiving{cause="no_segment",kind="shm",source="` + shmDir + `"} 0`,
		`edr_source_receiving{cause="no_data",kind="udp",source="` + udp + `"} 0`,
	} {
		if HTTPBuilt && !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	waitFor(t, "the silent sources logged", func() bool {
		return strings.Count(logs.String(), `msg="source receiving nothing"`) == 2
	})

	p, err := shm.NewProducer(shmDir, shm.ProducerOptions{Name: "sensor/a"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Publish(time.Now().UnixNano(), []byte{1})
	c, err := net.Dial("udp", udp)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, "both sources receiving", func() bool {
		c.Write([]byte("x"))
		st := d.Status()
		return st.Sources[0].Receiving && st.Sources[1].Receiving && st.Sources[0].Why == "" && st.Sources[1].Cause == ""
	})
	waitFor(t, "the sources logged receiving", func() bool {
		return strings.Count(logs.String(), `msg="source receiving"`) == 2
	})
	if HTTPBuilt && !strings.Contains(httpGetDaemon(t, d, "/metrics"), `edr_source_receiving{cause="",kind="udp",source="`+udp+`"} 1`) {
		t.Error("/metrics does not show the UDP source receiving")
	}

	// the whole document, with a rule loaded: snake_case keys only
	waitFor(t, "the rule in status", func() bool { return len(d.Status().Rules) == 1 })
	b, _ := json.Marshal(d.Status())
	var doc any
	json.Unmarshal(b, &doc)
	keys := map[string]string{}
	jsonKeys(doc, "", keys)
	if _, ok := keys[".rules[].lag_ns"]; !ok {
		t.Errorf("rules[].lag_ns missing from %s", b)
	}
	for path, k := range keys {
		if !snakeCase.MatchString(k) {
			t.Errorf("status key %s is not snake_case", path)
		}
	}
}

// httpGetDaemon fetches path from d's HTTP listener ("" in the ECU build,
// which has none).
func httpGetDaemon(t *testing.T, d *Daemon, path string) string {
	t.Helper()
	if !HTTPBuilt {
		return ""
	}
	resp, err := http.Get("http://" + d.HTTPAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCaptureHealth: why a UDP or raw source is not receiving.
func TestCaptureHealth(t *testing.T) {
	for _, c := range []struct {
		st      capture.Stats
		stopped error
		ok      bool
		cause   string
		why     string
	}{
		{capture.Stats{Ingested: 3, Packets: 3}, nil, true, "", ""},
		{capture.Stats{}, nil, false, CauseNoData, "nothing received on X since the recorder started"},
		{capture.Stats{Packets: 5, Malformed: 5}, nil, false, CauseRefused, "5 packets arrived, none recorded (malformed 5"},
		{capture.Stats{Ingested: 3}, errors.New("recvmmsg: EBADF"), false, CauseStopped, "stopped: recvmmsg: EBADF"},
	} {
		ok, cause, why := captureHealth("on X", c.st, c.stopped)
		if ok != c.ok || cause != c.cause || !strings.HasPrefix(why, c.why) {
			t.Errorf("%+v %v: %v %q %q, want %v %q %q", c.st, c.stopped, ok, cause, why, c.ok, c.cause, c.why)
		}
	}
}
