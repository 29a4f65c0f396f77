package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

func TestDefaultParsesToDefaults(t *testing.T) {
	f, err := Parse("default.toml", []byte(Default()))
	if err != nil {
		t.Fatal(err)
	}
	want := defaultFile()
	if !reflect.DeepEqual(f.Recorder, want.Recorder) || !reflect.DeepEqual(f.Rotation, want.Rotation) {
		t.Fatalf("default.toml differs from defaults():\n got %+v\nwant %+v", f.Recorder, want.Recorder)
	}
}

func TestParse(t *testing.T) {
	src := `
[recorder]
dump_dir = "/tmp/d"
cache_size = "64MiB"
pre = "3s"
post = 0

[[topic]]
match = "camera/*"
max_bytes = 1048576
keep_last = 2

[[source.udp]]
listen = "127.0.0.1:9000"

[[source.udp]]
listen = ":30490"
group = "ff15::1"
interface = "eth1"
schema_name = "someip"
max_packet = "1KiB"
gro = true

[[rule]]
builtin = "hard_brake"
params = { decel = "7" }
`
	f, err := Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if f.Recorder.CacheSize != 64<<20 || f.Recorder.Pre.D() != 3*time.Second || f.Recorder.Post != 0 {
		t.Errorf("recorder = %+v", f.Recorder)
	}
	if len(f.Topics) != 1 || *f.Topics[0].MaxBytes != 1<<20 || f.Topics[0].KeepLast != 2 {
		t.Errorf("topics = %+v", f.Topics)
	}
	if u := f.Sources.UDP; len(u) != 2 || !reflect.DeepEqual(u[1], UDPSource{Listen: ":30490", Group: "ff15::1", Interface: "eth1",
		MaxPacket: 1024, GRO: true, TypeKeys: TypeKeys{SchemaName: "someip", Type: ingest.Named("someip")}}) {
		t.Errorf("source.udp = %+v", u)
	}
	if len(f.Rules) != 1 || f.Rules[0].Params["decel"] != "7" {
		t.Errorf("rules = %+v", f.Rules)
	}
	if f.Recorder.Guard.D() != 500*time.Millisecond {
		t.Errorf("unset keys must keep defaults, guard = %v", f.Recorder.Guard.D())
	}
}

func TestParseErrorsNameKeyAndLine(t *testing.T) {
	f := func(src, want string) {
		t.Helper()
		_, err := Parse("bad.toml", []byte(src))
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("Parse(%q) err = %v, want ErrInvalid", src, err)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) err = %q, want it to contain %q", src, err, want)
		}
	}
	f("[recorder]\ncache_size = \"lots\"\n", "bad.toml:2")
	f("[recorder]\ncache_size = \"lots\"\n", `"lots"`)
	f("[recorder]\npre = \"15\"\n", "bad.toml:2")
	f("[recorder]\npre = 15\n", "no unit")
	f("[recorder]\n\ncahce_size = \"1MiB\"\n", `bad.toml:3: recorder.cahce_size: unknown key (did you mean "cache_size"?)`)
	f("[recorder]\nformat = \"bag\"\n", "recorder.format")
	f("[[topic]]\nmatch = \"a\"\nonly_front = true\nonly_back = true\n", "exclusive")
	f("[[topic]]\nmatch = \"a\"\nfoo = 1\n", `bad.toml:3: topic[0].foo: unknown key ([[topic]] takes: encoding,`)
	f("[recorder\n", "bad.toml:")
	f("[[rule]]\nfile = \"a.lua\"\nbuiltin = \"b\"\n", "exactly one")
	f("[recorder]\ncache_size = \"10KiB\"\n", "at least 1MiB")
	f("[[source.udp]]\nlisten = \":1\"\ninterface = \"eth0\"\n", "bad.toml:3: source.udp[0].interface: \"eth0\": only used to join a multicast group")
	f("[[source.shm]]\ndir = \"/x\"\nread_interval = \"1s\"\n", "bad.toml:3: source.shm[0].read_interval: 1s: want 0 to 100ms (omit it for the default 1ms)")
	f("[[source.shm]]\ndir = \"/x\"\nread_interval = \"-1ms\"\n", "bad.toml:3: source.shm[0].read_interval: duration \"-1ms\" is negative")
}

// TestShmReadInterval: unset is the default, 0 is 0 (a wake-up per
// message), a value is that value.
func TestShmReadInterval(t *testing.T) {
	f := func(src string, want time.Duration) {
		t.Helper()
		c, err := Parse("a.toml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Sources.SHM[0].Read(); got != want {
			t.Errorf("%q: read interval %v, want %v", src, got, want)
		}
	}
	f("[[source.shm]]\ndir = \"/x\"\n", defaults.ShmReadInterval)
	f("[[source.shm]]\ndir = \"/x\"\nread_interval = \"0\"\n", 0)
	f("[[source.shm]]\ndir = \"/x\"\nread_interval = \"5ms\"\n", 5*time.Millisecond)
}

// TestSizesFitInt: a size the recorder takes as an int is refused on a
// platform whose int cannot hold it, not wrapped (4GiB+100 would be 100 on
// 32-bit); where int holds it, it parses.
func TestSizesFitInt(t *testing.T) {
	for _, src := range []string{
		"[recorder]\nframe_target_size = \"4GiB\"\n",
		"[[topic]]\nmatch = \"a\"\nmax_packet = \"3GiB\"\n",
		"[[source.udp]]\nlisten = \":1\"\nrcvbuf = \"2GiB\"\n",
	} {
		_, err := Parse("big.toml", []byte(src))
		if strconv.IntSize == 64 {
			if err != nil {
				t.Errorf("Parse(%q) on 64-bit: %v", src, err)
			}
		} else if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "more than a 32-bit int holds") {
			t.Errorf("Parse(%q) on 32-bit: %v, want a size error", src, err)
		}
	}
}

// TestREADMEConfigurationParses keeps the README's example configuration
// valid: every toml block in it must pass the strict parser.
func TestREADMEConfigurationParses(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(b), "```toml\n")[1:]
	if len(blocks) == 0 {
		t.Fatal("README.md has no toml block")
	}
	for i, blk := range blocks {
		src, _, ok := strings.Cut(blk, "```")
		if !ok {
			t.Fatalf("toml block %d is not closed", i)
		}
		if _, err := Parse(fmt.Sprintf("README.md toml block %d", i), []byte(src)); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// TestDefaultFileShowsTheTable: "config init" is rendered from the one
// table of defaults: the commented examples, uncommented, carry the
// defaults too (the UDP receive buffer sized for bursts, not the kernel's).
func TestDefaultFileShowsTheTable(t *testing.T) {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(Default(), "\n") {
		switch {
		case strings.HasPrefix(l, "# [[source.udp]]"):
			in = true
		case in && !strings.HasPrefix(l, "# ") || in && l == "#":
			in = false
		}
		if in {
			l = strings.TrimPrefix(l, "# ")
		}
		b.WriteString(l + "\n")
	}
	f, err := Parse("default.toml", []byte(b.String()))
	if err != nil {
		t.Fatalf("the default file with its UDP example uncommented: %v", err)
	}
	if len(f.Sources.UDP) != 1 || f.Sources.UDP[0].RcvBuf == nil || int64(*f.Sources.UDP[0].RcvBuf) != defaults.UDPRcvBuf {
		t.Errorf("the UDP example shows rcvbuf %v, want the default %d", f.Sources.UDP, defaults.UDPRcvBuf)
	}
	for _, want := range []string{`pre = "15s"`, `post = "5s"`, `guard = "500ms"`, `max_manual_dumps_per_minute = 6`, `stop_deadline = "30s"`} {
		if !strings.Contains(Default(), "\n"+want+"\n") {
			t.Errorf("the default file lacks %q", want)
		}
	}
	if Duration(defaults.Pre) != defaultFile().Recorder.Pre || defaultFile().Recorder.MaxManualPerMinute != defaults.ManualPerMinute {
		t.Error("defaultFile() is not the table")
	}
}
