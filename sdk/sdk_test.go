package sdk_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// kit is what the tests share: the library, the programs and the dumps,
// built once per run into one temporary directory.
type kit struct {
	dir     string
	lib     string // libedrpack.so
	bin     string // edr-lite
	ctest   string // edrpack_test.c with ASan, against the shared library
	cctest  string // edrpack_test.cc with ASan
	hpp     string // edrpack_wrapper_test.cc (edr_pack.hpp only) with ASan
	cstatic string // edrpack_test.c against the c-archive, no ASan
	cplain  string // edrpack_test.c against the shared library, -O0, no ASan: for valgrind
	demo    string // a demo dump (pack)
	demoMC  string // its MCAP export
	rec     string // a recorder dump: zstd frames, channels
}

var (
	kitOnce sync.Once
	theKit  *kit
	kitErr  error
	kitSkip string
	kitDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if kitDir != "" {
		os.RemoveAll(kitDir)
	}
	os.Exit(code)
}

func compiler(env, def string) string {
	if c := os.Getenv(env); c != "" {
		return c
	}
	return def
}

// getKit builds everything once; it skips when there is no C compiler.
func getKit(t *testing.T) *kit {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the C library, C programs and a demo dump; skipped in -short mode")
	}
	kitOnce.Do(func() {
		cc, cxx := compiler("CC", "cc"), compiler("CXX", "c++")
		if _, err := exec.LookPath(cc); err != nil {
			kitSkip = fmt.Sprintf("no C compiler (%s): the C API tests need one (apt-get install gcc g++)", cc)
			return
		}
		if _, err := exec.LookPath(cxx); err != nil {
			kitSkip = fmt.Sprintf("no C++ compiler (%s): the C API tests need one (apt-get install g++)", cxx)
			return
		}
		theKit, kitErr = buildKit(cc, cxx)
	})
	if kitSkip != "" {
		t.Skip(kitSkip)
	}
	if kitErr != nil {
		t.Fatal(kitErr)
	}
	return theKit
}

func run(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

func buildKit(cc, cxx string) (*kit, error) {
	dir, err := os.MkdirTemp("", "edr-sdk-")
	if err != nil {
		return nil, err
	}
	kitDir = dir
	root, err := filepath.Abs("..")
	if err != nil {
		return nil, err
	}
	k := &kit{dir: dir, lib: filepath.Join(dir, "libedrpack.so"), bin: filepath.Join(dir, "edr-lite"),
		ctest: filepath.Join(dir, "ctest"), cctest: filepath.Join(dir, "cctest"), cstatic: filepath.Join(dir, "cstatic"), cplain: filepath.Join(dir, "cplain"),
		hpp: filepath.Join(dir, "hpp")}
	cgo := []string{"CGO_ENABLED=1"}
	steps := [][]string{
		{"go", "build", "-buildmode=c-shared", "-o", k.lib, "./sdk/libedrpack"},
		{"go", "build", "-buildmode=c-archive", "-o", filepath.Join(dir, "libedrpack.a"), "./sdk/libedrpack"},
		{"go", "build", "-o", k.bin, "./cmd/edr-lite"},
		{cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-g", "-fsanitize=address", "-fno-omit-frame-pointer", "-Isdk/include",
			"sdk/test/edrpack_test.c", "-L" + dir, "-ledrpack", "-Wl,-rpath," + dir, "-lpthread", "-o", k.ctest},
		{cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-g", "-fsanitize=address", "-fno-omit-frame-pointer", "-Isdk/include",
			"sdk/test/edrpack_test.cc", "-L" + dir, "-ledrpack", "-Wl,-rpath," + dir, "-o", k.cctest},
		{cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-g", "-fsanitize=address", "-fno-omit-frame-pointer", "-Isdk/include",
			"sdk/test/edrpack_wrapper_test.cc", "-L" + dir, "-ledrpack", "-Wl,-rpath," + dir, "-o", k.hpp},
		{cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-Isdk/include", "sdk/test/edrpack_test.c",
			filepath.Join(dir, "libedrpack.a"), "-lpthread", "-ldl", "-lm", "-o", k.cstatic},
		{cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-g", "-O0", "-Isdk/include", "sdk/test/edrpack_test.c",
			"-L" + dir, "-ledrpack", "-Wl,-rpath," + dir, "-lpthread", "-o", k.cplain},
	}
	for _, s := range steps {
		if _, err := run(root, cgo, s[0], s[1:]...); err != nil {
			return nil, err
		}
	}
	demoDir := filepath.Join(dir, "demo")
	if _, err := run(dir, nil, k.bin, "demo", "--dir", demoDir, "--duration", "4s"); err != nil {
		return nil, err
	}
	dumps, _ := filepath.Glob(filepath.Join(demoDir, "*.pack"))
	if len(dumps) != 1 {
		return nil, fmt.Errorf("demo wrote %v", dumps)
	}
	k.demo = dumps[0]
	k.demoMC = filepath.Join(dir, "demo.mcap")
	if _, err := run(dir, nil, k.bin, "export", "--format", "mcap", "--compression", "zstd", k.demo, "-o", k.demoMC); err != nil {
		return nil, err
	}
	k.rec, err = recorderDump(filepath.Join(dir, "rec"))
	return k, err
}

// recorderDump runs a recorder on a virtual clock with three topics (two
// channels of one name) and writes one dump with zstd frames of 16 KiB.
func recorderDump(dir string) (string, error) {
	const t0, ms = int64(1_700_000_000_000_000_000), int64(time.Millisecond)
	vc := clock.NewVirtual(t0)
	rec, err := engine.New(engine.Config{Clock: vc, CacheSize: 16 << 20, TopicBytes: 2 << 20,
		Pre: new(2 * time.Second), Post: new(500 * time.Millisecond), Guard: new(100 * time.Millisecond)})
	if err != nil {
		return "", err
	}
	defer rec.Close()
	d, err := dump.New(rec, dump.Config{Dir: dir, Compression: "zstd", FrameSize: 16 << 10, PollInterval: time.Millisecond})
	if err != nil {
		return "", err
	}
	if err := d.Start(); err != nil {
		return "", err
	}
	defer d.Stop()
	var ids []ingest.TopicID
	for _, ti := range []ingest.TopicInfo{{Name: "lidar", Channel: "top", Type: ingest.Raw("points")}, {Name: "lidar", Channel: "front", Type: ingest.Raw("points")},
		{Name: "can/frame", Type: ingest.Raw("can")}} {
		id, err := rec.Discover(ti)
		if err != nil {
			return "", err
		}
		ids = append(ids, id)
	}
	payload := make([]byte, 3000)
	feed := func(from, to int64) {
		for ns := from; ns <= to; ns += 10 * ms {
			vc.Set(ns)
			for k, id := range ids {
				n := 8
				if k < 2 {
					n = 1000 + int((ns/ms)%2000)
				}
				for i := range payload[:n] {
					payload[i] = byte((ns/ms)*7 + int64(i/16) + int64(k))
				}
				rec.Ingest(id, ns-ms, payload[:n])
			}
		}
	}
	feed(t0, t0+3000*ms)
	id, err := d.Trigger(dump.TriggerParams{Reason: "sdk test"})
	if err != nil {
		return "", err
	}
	feed(t0+3010*ms, t0+3700*ms)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := d.Wait(ctx, id)
	if err != nil {
		return "", err
	}
	return res.Path, res.Err
}

// cRun runs a program of the kit with cgo's pointer checks on.
func cRun(t *testing.T, k *kit, prog string, args ...string) string {
	t.Helper()
	out, err := run(k.dir, []string{"GODEBUG=cgocheck=1", "ASAN_OPTIONS=detect_leaks=1"}, prog, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// topicFigures is what both sides print per topic.
type topicFigures struct {
	Messages, Bytes uint64
	FNV             string
}

// parseSummary reads "frames N messages M" and "topic NAME MSGS BYTES FNV"
// lines (and "listed NAME MSGS").
func parseSummary(t *testing.T, out string) (frames, msgs uint64, topics map[string]topicFigures, listed map[string]uint64) {
	t.Helper()
	topics, listed = map[string]topicFigures{}, map[string]uint64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 4 && f[0] == "frames":
			frames, _ = strconv.ParseUint(f[1], 10, 64)
			msgs, _ = strconv.ParseUint(f[3], 10, 64)
		case len(f) == 5 && f[0] == "topic":
			m, _ := strconv.ParseUint(f[2], 10, 64)
			b, _ := strconv.ParseUint(f[3], 10, 64)
			topics[f[1]] = topicFigures{m, b, f[4]}
		case len(f) == 3 && f[0] == "listed":
			listed[f[1]], _ = strconv.ParseUint(f[2], 10, 64)
		}
	}
	return frames, msgs, topics, listed
}

// expected returns the per-topic figures of path as the edr-lite binary
// prints them: counts from info --json, payload bytes and FNV-1a 64 of the
// payloads in order from cat --jsonl.
func expected(t *testing.T, k *kit, path string) (msgs uint64, topics map[string]topicFigures, info map[string]uint64) {
	t.Helper()
	out, err := run(k.dir, nil, k.bin, "info", "--json", path)
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Messages uint64 `json:"messages"`
		Topics   []struct {
			Name     string `json:"name"`
			Messages uint64 `json:"messages"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatal(err)
	}
	info = map[string]uint64{}
	for _, tp := range in.Topics {
		info[tp.Name] = tp.Messages
	}
	return in.Messages, catFigures(t, k, path), info
}

// catFigures returns the per-topic figures of what edr-lite cat --jsonl
// prints of path with the selection flags sel.
func catFigures(t *testing.T, k *kit, path string, sel ...string) map[string]topicFigures {
	t.Helper()
	out, err := run(k.dir, nil, k.bin, append(append([]string{"cat", "--jsonl"}, sel...), path)...)
	if err != nil && len(sel) > 0 && strings.Contains(err.Error(), "the selection matches nothing") {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	type acc struct {
		n, b uint64
		h    uint64
	}
	accs := map[string]*acc{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l struct {
			Topic string `json:"topic"`
			Data  string `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		d, _ := base64.StdEncoding.DecodeString(l.Data)
		a := accs[l.Topic]
		if a == nil {
			a = &acc{h: fnv.New64a().Sum64()} // the offset basis
			accs[l.Topic] = a
		}
		a.n++
		a.b += uint64(len(d))
		a.h = fnv64a(a.h, d)
	}
	topics := map[string]topicFigures{}
	for name, a := range accs {
		topics[name] = topicFigures{a.n, a.b, fmt.Sprintf("%016x", a.h)}
	}
	return topics
}

func fnv64a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

func sameFigures(t *testing.T, what string, got, want map[string]topicFigures) {
	t.Helper()
	if len(got) == 0 || fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
		t.Errorf("%s:\n got %v\nwant %v", what, sorted(got), sorted(want))
	}
}

func sorted[V any](m map[string]V) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(out)
	return out
}

// TestCReadsLikeGo: the C and C++ programs read the demo dump, its MCAP
// export and a recorder dump (zstd) through every way in (file, fd,
// callback, memory; shared and static library) and print the topics,
// counts and payload checksums edr-lite info --json and cat --jsonl give.
func TestCReadsLikeGo(t *testing.T) {
	k := getKit(t)
	for _, tc := range []struct{ name, path, like string }{
		{"demo", k.demo, k.demo}, {"recorder", k.rec, k.rec}, {"demo-mcap", k.demoMC, k.demo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, want, info := expected(t, k, tc.like)
			out := cRun(t, k, k.ctest, "summary", tc.path)
			_, gotMsgs, got, listed := parseSummary(t, out)
			sameFigures(t, "C summary", got, want)
			if gotMsgs != msgs || fmt.Sprint(sorted(listed)) != fmt.Sprint(sorted(info)) {
				t.Errorf("C: %d messages, topics listed %v; info --json: %d, %v", gotMsgs, sorted(listed), msgs, sorted(info))
			}
			ways := [][]string{{k.ctest, "mem", tc.path}, {k.cctest, tc.path}, {k.cstatic, "summary", tc.path}, {k.hpp, "summary", tc.path}}
			if tc.path != k.demoMC { // streams are pack only
				ways = append(ways, []string{k.ctest, "fd", tc.path}, []string{k.ctest, "callback", tc.path})
			}
			for _, w := range ways {
				_, _, got, _ := parseSummary(t, cRun(t, k, w[0], w[1:]...))
				sameFigures(t, strings.Join(w[1:], " ")+" ("+filepath.Base(w[0])+")", got, want)
			}
		})
	}
}

// TestCWritesWhatVerifyAccepts: a file written through the C API (frames
// made every way the API offers) verifies and reads back in Go as built.
func TestCWritesWhatVerifyAccepts(t *testing.T) {
	k := getKit(t)
	out := filepath.Join(t.TempDir(), "c.pack")
	cRun(t, k, k.ctest, "write", out)
	if v, err := run(k.dir, nil, k.bin, "verify", out); err != nil || !strings.Contains(v, "ok") {
		t.Fatalf("verify: %v %s", err, v)
	}
	r, err := pack.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Header().Writer != "edrpack_test.c" || r.Header().CreatedNs != 1700000000000000000 {
		t.Errorf("header %+v", r.Header())
	}
	if m, ok := r.Metadata("note"); !ok || string(m) != "written by edrpack_test.c" {
		t.Errorf("metadata note %q %v", m, ok)
	}
	var f pack.Frame
	for i := 0; ; i++ {
		err := r.ReadInto(&f)
		if err == io.EOF {
			if i != 20 {
				t.Fatalf("%d frames, want 20", i)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		tm := int64(1700000000000000000) + int64(i)*10000000
		if f.ID() != uint64(i) || f.Time() != tm || f.DoneTime() != tm+5000000 || f.Type() != pack.FrameType(i%2) || f.Len() != 3 {
			t.Fatalf("frame %d: id %d time %d done %d type %v len %d", i, f.ID(), f.Time(), f.DoneTime(), f.Type(), f.Len())
		}
		speed, imu, cam := f.Message(0), f.Data(1), f.Data(2)
		if speed.Name != "vehicle/speed" || speed.Channel != "can0" || string(speed.Meta) != fmt.Sprintf(`{"v":%d}`, 20+i) || speed.DataIndex != pack.NoData {
			t.Fatalf("frame %d speed %+v", i, speed)
		}
		if len(imu) != 24 || imu[0] != byte(i) || imu[23] != byte(i+23) {
			t.Fatalf("frame %d imu %v", i, imu)
		}
		if len(cam) != 64<<10 || cam[1000] != byte((1000*7+1000/256)%256) || string(f.Message(2).Meta) != "jpeg" {
			t.Fatalf("frame %d camera: %d bytes", i, len(cam))
		}
	}
}

// seekTimes returns times around every frame of a pack file and past both
// ends.
func seekTimes(t *testing.T, path string) []int64 {
	r, err := pack.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := r.Summary()
	ts := []int64{0, s.FirstNs - 1, s.LastNs + 1}
	for q := int64(1); q < 8; q++ { // inside frames too: the demo dump is one frame
		ts = append(ts, s.FirstNs+(s.LastNs-s.FirstNs)*q/8)
	}
	var f pack.Frame
	for r.ReadMetaInto(&f) == nil {
		ts = append(ts, f.Time()-1, f.Time(), f.Time()+1)
	}
	return ts
}

// afterSeek returns, for each time, the line the C program and the Python
// module print for the messages a seek there must yield: those whose time
// is >= it (pack: MessageTime; MCAP: log time), counted and summed
// (FNV-1a 64 of "TOPIC@TIME") from a whole read of path without a seek.
func afterSeek(t *testing.T, path string, times []int64) map[int64]string {
	t.Helper()
	src, err := dumpfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	type msg struct {
		topic string
		time  int64
	}
	var all []msg
	if pr := src.Pack(); pr != nil {
		var f pack.Frame
		for {
			if err := pr.ReadMetaInto(&f); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			for i := range f.Len() {
				m := f.Message(i)
				all = append(all, msg{mcap.TopicName(m.Name, m.Channel), pack.MessageTime(&m, f.Time())})
			}
		}
	} else {
		mp := src.MCAP()
		for {
			ok, err := mp.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			m := mp.Message()
			all = append(all, msg{mcap.TopicName(m.Name, m.Channel), m.DoneTs})
		}
	}
	out := map[int64]string{}
	for _, x := range times {
		var n, sum uint64
		for _, m := range all {
			if m.time >= x {
				n++
				sum += fnv64a(fnv.New64a().Sum64(), []byte(fmt.Sprintf("%s@%d", m.topic, m.time)))
			}
		}
		out[x] = fmt.Sprintf("after %d messages %d sum %016x", x, n, sum)
	}
	return out
}

// TestCSeekTimeLikeGo: edr_pack_seek_time lands on the frame pack.Reader's
// SeekTime lands on (pack), on the message mcap.PackReader's SeekTime does
// (MCAP), and reading on from there yields exactly the messages with time
// >= the time sought, whatever the frames' bounds (issue #31, item 2: in
// the demo dump, one frame, a seek to its middle yielded none of them).
func TestCSeekTimeLikeGo(t *testing.T) {
	k := getKit(t)
	for _, path := range []string{k.demo, k.rec, k.demoMC} {
		ts := seekTimes(t, k.demo)
		if path == k.rec {
			ts = seekTimes(t, k.rec)
		}
		args := []string{"seek", path}
		for _, x := range ts {
			args = append(args, strconv.FormatInt(x, 10))
		}
		var lines []string
		afters, after := 0, afterSeek(t, path, ts)
		for _, l := range strings.Split(strings.TrimSpace(cRun(t, k, k.ctest, args...)), "\n") {
			if !strings.HasPrefix(l, "after ") {
				lines = append(lines, l)
				continue
			}
			var x int64
			fmt.Sscanf(l, "after %d", &x)
			if l != after[x] {
				t.Errorf("%s: C read after the seek: %q, want %q", filepath.Base(path), l, after[x])
			}
			afters++
		}
		if len(lines) != len(ts) || afters != len(ts) {
			t.Fatalf("%s: %d and %d lines for %d times", path, len(lines), afters, len(ts))
		}
		src, err := dumpfile.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range ts {
			want := fmt.Sprintf("seek %d eof", x)
			if pr := src.Pack(); pr != nil {
				var f pack.Frame
				if err := pr.SeekTime(x); err != nil {
					t.Fatal(err)
				}
				if err := pr.ReadMetaInto(&f); err == nil {
					want = fmt.Sprintf("seek %d offset %d id %d time %d", x, pr.FrameOffset(), f.ID(), f.Time())
				}
			} else {
				mp := src.MCAP()
				mp.SeekTime(x)
				if ok, err := mp.Next(); err != nil {
					t.Fatal(err)
				} else if ok {
					want = fmt.Sprintf("seek %d offset -1 time %d", x, mp.Message().DoneTs)
				}
				lines[i] = dropID(lines[i]) // an MCAP frame's id counts the messages read
			}
			if lines[i] != want {
				t.Errorf("%s: C %q, Go %q", filepath.Base(path), lines[i], want)
			}
		}
		src.Close()
	}
}

// dropID removes "id N " from a seek line.
func dropID(l string) string {
	f := strings.Fields(l)
	for i := range f {
		if f[i] == "id" && i+1 < len(f) {
			return strings.Join(append(f[:i:i], f[i+2:]...), " ")
		}
	}
	return l
}

// TestCCorruptFile: damaged files give an error code and the offset the Go
// reader reports, never a crash (the program runs under ASan).
func TestCCorruptFile(t *testing.T) {
	k := getKit(t)
	good, err := os.ReadFile(k.demo) // typed, in frames of 250 ms
	if err != nil {
		t.Fatal(err)
	}
	r, _ := pack.NewBytesReader("x", good, pack.ReaderOptions{})
	offs := r.FrameOffsets()
	if len(offs) < 6 {
		t.Fatalf("%d frames, the damage below needs 6", len(offs))
	}
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"data", func(b []byte) []byte { b[offs[3]+5000] ^= 0x40; return b }},
		{"meta", func(b []byte) []byte { b[offs[5]+pack.FrameHeaderSize+3] ^= 1; return b }},
		{"frame header", func(b []byte) []byte { b[offs[2]+14] = 0xff; b[offs[2]+15] = 0x7f; return b }},
		{"cut", func(b []byte) []byte { return b[:offs[4]+100] }},
		{"file header", func(b []byte) []byte { b[20] ^= 1; return b }},
		{"not a dump", func(b []byte) []byte { return []byte("hello, this is not a dump") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.pack")
			b := tc.damage(bytes.Clone(good))
			os.WriteFile(p, b, 0o644)
			out := cRun(t, k, k.ctest, "corrupt", p)
			var code int
			var off int64
			if _, err := fmt.Sscanf(out, "error %d offset %d", &code, &off); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			// the Go side: the first error reading the file
			var wantOff int64 = -1
			gr, err := pack.NewBytesReader(p, b, pack.ReaderOptions{})
			if err == nil {
				var f pack.Frame
				for err == nil {
					err = gr.ReadInto(&f)
				}
			}
			var ce *pack.CorruptError
			if errors.As(err, &ce) {
				wantOff = ce.Offset
			}
			if tc.name == "not a dump" { // no offset: the format is unknown
				if code != -5 || !strings.Contains(out, "not a pack, MCAP, JSON lines, MP4, candump log or ASC file") {
					t.Errorf("C: %q, want EDR_EFORMAT", strings.TrimSpace(out))
				}
				return
			}
			if code >= 0 || off != wantOff || !strings.Contains(out, "offset") {
				t.Errorf("C: %q; Go: %v (offset %d)", strings.TrimSpace(out), err, wantOff)
			}
		})
	}
}

// TestCMisuse: bad, closed and busy handles, double close and double free
// are refused with codes, not crashes.
func TestCMisuse(t *testing.T) {
	k := getKit(t)
	if out := cRun(t, k, k.ctest, "misuse", k.demo); !strings.Contains(out, "misuse ok") {
		t.Fatal(out)
	}
}

// TestPythonModule: sdk/python/edrpack (ctypes, stdlib only; from the source tree) reads the
// demo dump and its MCAP export with the counts and checksums of
// edr-lite info --json / cat --jsonl, and seeks by time like the Go API.
func TestPythonModule(t *testing.T) {
	k := getKit(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	msgs, want, info := expected(t, k, k.demo)
	ts := seekTimes(t, k.demo)
	pick := []int64{ts[3], ts[6], ts[len(ts)/2], ts[len(ts)-2]} // ts[6]: the middle of the dump
	for _, path := range []string{k.demo, k.demoMC} {
		args := []string{"sdk/python/edrpack_check.py", path}
		for _, x := range pick {
			args = append(args, strconv.FormatInt(x, 10))
		}
		out, err := run("..", []string{"EDRPACK_LIB=" + k.lib}, py, args...)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range afterSeek(t, path, pick) { // exactly the messages >= the time sought
			if !strings.Contains(out, want+"\n") {
				t.Errorf("python %s: no line %q in\n%s", filepath.Base(path), want, out)
			}
		}
		_, gotMsgs, got, listed := parseSummary(t, out)
		sameFigures(t, "python "+filepath.Base(path), got, want)
		if gotMsgs != msgs || fmt.Sprint(sorted(listed)) != fmt.Sprint(sorted(info)) {
			t.Errorf("python: %d messages, topics %v; info --json: %d, %v", gotMsgs, sorted(listed), msgs, sorted(info))
		}
		src, err := dumpfile.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range pick {
			// the first message at or after x in the Go API's time order
			var want string
			if pr := src.Pack(); pr != nil {
				var f pack.Frame
				pr.SeekTime(x)
				if pr.ReadInto(&f) == nil && f.Len() > 0 {
					m := f.Message(0)
					want = fmt.Sprintf("seek %d %s %d", x, mcap.TopicName(m.Name, m.Channel), dumpfile.MessageTime(&m, f.Time()))
				}
			} else {
				mp := src.MCAP()
				mp.SeekTime(x)
				if ok, _ := mp.Next(); ok {
					m := mp.Message()
					want = fmt.Sprintf("seek %d %s %d", x, mcap.TopicName(m.Name, m.Channel), m.DoneTs)
				}
			}
			if !strings.Contains(out, want+"\n") {
				t.Errorf("python %s: no line %q in\n%s", filepath.Base(path), want, out)
			}
		}
		src.Close()
	}
}

// smallFrames returns the dump at path rewritten in frames of about 64 KiB
// (the typed demo dump fits in one frame of the default size), so that the
// damage of TestCCorruptFile lands in several frames.
func smallFrames(t *testing.T, path string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "small.pack")
	rewriteDump(t, path, out, 64<<10, 1)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rewriteDump writes the messages of the pack dump at path to out, in
// frames of about frameSize bytes, repeat times over (each pass shifted
// past the previous one in time).
func rewriteDump(t *testing.T, path, out string, frameSize, repeat int) {
	t.Helper()
	w, err := pack.Create(out, pack.WriterOptions{TargetFrameSize: frameSize})
	if err != nil {
		t.Fatal(err)
	}
	var shift, last int64
	for range repeat {
		pr, err := pack.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		f := pack.NewFrame(0, 0)
		first := int64(0)
		for {
			err := pr.ReadInto(f)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range f.Len() {
				m := f.Message(i)
				if first == 0 {
					first = m.DoneTs
				}
				last = max(last, m.DoneTs+shift)
				if err := w.Add(m.Name, m.Channel, nil, m.GenTs+shift, m.DoneTs+shift, f.Data(i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		pr.Close()
		shift = last - first + 1
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestShrinkingFile (issue #31, item 3): a file that shrinks while the C
// library or the Python module reads it (truncated by another process, or
// re-created by edr_pack_open_write on the same path) never kills the
// host: the view read before stays readable (the library hands C copies,
// not the mapping), the reads that follow end in an error code naming the
// offset (EDR_EIO for a page that is gone; the zeros left in the last page
// read as damage, EDR_ECORRUPT), and seeks and the summary answer. Before,
// the first read past the new end killed the process with SIGBUS ("fatal
// error: fault", exit 2 from the Go runtime inside the library; C reading
// a view's data died of the signal).
func TestShrinkingFile(t *testing.T) {
	k := getKit(t)
	small := filepath.Join(t.TempDir(), "small.pack")
	os.WriteFile(small, smallFrames(t, k.demo), 0o644)
	r, err := pack.Open(small)
	if err != nil {
		t.Fatal(err)
	}
	offs := r.FrameOffsets()
	r.Close()
	if len(offs) < 8 {
		t.Fatalf("%d frames", len(offs))
	}
	cut := offs[5] + 100
	py, pyErr := exec.LookPath("python3")
	for _, tc := range []struct {
		name, src, how string
		errs           bool // the reads must end in an error (pack); MCAP may have the rest decompressed
	}{
		{"pack-truncate", small, strconv.FormatInt(cut, 10), true},
		{"pack-recreate", small, "recreate", true},
		{"recorder-truncate", k.rec, "70000", true},
		{"mcap-truncate", k.demoMC, "70000", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "f"+filepath.Ext(tc.src))
			os.WriteFile(p, b, 0o644)
			out := cRun(t, k, k.ctest, "shrink", p, tc.how) // a crash fails here
			t.Logf("C: %s", out)
			var frames int64
			var code int
			var off int64
			if _, err := fmt.Sscanf(out, "frames %d error %d offset %d", &frames, &code, &off); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			if tc.errs && (code != -3 && code != -4 || off < 0 || !strings.Contains(out, "summary -3")) || code < 0 && off < 0 || !strings.Contains(out, "summary ") {
				t.Fatalf("C after the file shrank: %q", out)
			}
			if code == -3 && !strings.Contains(out, "shrank while it was read") {
				t.Errorf("C: the error does not say the file shrank: %q", out)
			}
			if tc.how == "recreate" || pyErr != nil {
				return
			}
			os.WriteFile(p, b, 0o644)
			out, err = run("..", []string{"EDRPACK_LIB=" + k.lib}, py, "-c", pyShrink, p, tc.how)
			if err != nil {
				t.Fatalf("python: %v", err) // a crash fails here
			}
			t.Logf("python: %s", out)
			if tc.errs && !strings.Contains(out, " error -3 offset ") && !strings.Contains(out, " error -4 offset ") || !strings.Contains(out, "kept ") {
				t.Fatalf("python after the file shrank: %q", out)
			}
		})
	}
}

// pyShrink reads two frames of argv[1] through edrpack, truncates the file
// to argv[2] bytes, and reads on.
const pyShrink = `
import os, sys
sys.path.insert(0, "sdk/python")
import edrpack
path, size = sys.argv[1], int(sys.argv[2])
d = edrpack.Dump(path)
it = d.frames()
next(it)
_, _, msgs = next(it)
os.truncate(path, size)
n = 2
try:
    for _ in it:
        n += 1
    print("frames", n, "eof")
except edrpack.EdrError as e:
    print("frames", n, "error", e.code, "offset", e.offset, e)
try:
    d.seek_time(0)
    print("seek ok")
except edrpack.EdrError as e:
    print("seek error", e.code, "offset", e.offset)
print("kept", len(msgs[-1][2] or b""))
d.close()
`

// TestSkipDamagedCAndPython (issue #31, item 5): opened with skip_damaged
// (C: edr_pack_open_read_with; Python: Dump(path, skip_damaged=True)), a
// file with a damaged frame, or a damaged type section, reads on past it:
// every other frame, and edr_pack_skipped / Dump.skipped() count what was
// skipped, where it starts. Opened without it, the damage stops the reads
// and its error stays (the behaviour before, then the only one).
func TestSkipDamagedCAndPython(t *testing.T) {
	k := getKit(t)
	good, err := os.ReadFile(k.demo) // typed, in frames of 250 ms
	if err != nil {
		t.Fatal(err)
	}
	r, _ := pack.NewBytesReader("x", good, pack.ReaderOptions{})
	offs := r.FrameOffsets()
	types, _ := r.Types()
	var f pack.Frame
	r.SeekFrame(offs[3])
	r.ReadInto(&f)
	lost := f.Len()
	total := 0
	for _, t := range r.Summary().Topics {
		total += int(t.Messages)
	}
	if len(offs) < 6 || len(types) == 0 {
		t.Fatalf("%d frames, %d types", len(offs), len(types))
	}
	py, pyErr := exec.LookPath("python3")
	for _, tc := range []struct {
		name         string
		at           int64
		frames, msgs int
		regionFrames int
		// what a stream and a read filtered to the first frame's topic make of it
		streamStops     bool
		filteredRegions int
	}{
		{"frame", offs[4] - 5, len(offs) - 1, total - lost, 1, false, 0},                             // the fourth frame's data
		{"frame head", offs[3] + 6, len(offs) - 1, total - lost, 1, true, 1},                         // its head
		{"type section", types[0].Offset + pack.SectionHeaderSize + 2, len(offs), total, 0, true, 1}, // the first type section
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(good)
			b[tc.at] ^= 0x08
			p := filepath.Join(t.TempDir(), "d.pack")
			os.WriteFile(p, b, 0o644)
			start := offs[3]
			if tc.regionFrames == 0 {
				start = types[0].Offset
			}
			out := cRun(t, k, k.ctest, "skip", p)
			var frames, msgs, regions, rframes, bytes_, ntypes uint64
			var first, code, off int64
			_, strict, _ := strings.Cut(out, "strict ")
			if _, err := fmt.Sscanf(out, "frames %d messages %d skipped regions %d frames %d bytes %d types %d first %d\n",
				&frames, &msgs, &regions, &rframes, &bytes_, &ntypes, &first); err != nil {
				t.Fatalf("C output %q: %v", out, err)
			}
			if _, err := fmt.Sscanf(strict, "error %d offset %d", &code, &off); err != nil {
				t.Fatalf("C output %q: %v", out, err)
			}
			if int(frames) != tc.frames || int(msgs) != tc.msgs || regions != 1 || int(rframes) != tc.regionFrames || first != start || code != -4 || off < start {
				t.Errorf("C: %q; want %d frames, %d messages, 1 region of %d frames at %d, then strict: EDR_ECORRUPT", out, tc.frames, tc.msgs, tc.regionFrames, start)
			}
			// From memory as from the file; a stream passes a damaged frame
			// whose head checks out, and stops at a damaged section (it
			// cannot trust the section's length to go on; docs/sdk.md).
			if w := fmt.Sprintf("mem frames %d messages %d skipped regions 1\n", tc.frames, tc.msgs); !strings.Contains(out, w) {
				t.Errorf("C from memory: no %q in %q", w, out)
			}
			// Filtered to a topic of the first frame only: the frames after
			// it are not read, so damage in a frame's data is not met; a
			// damaged section or frame head is (the plan never moves past
			// damage its walk met).
			if w := fmt.Sprintf("one-topic messages 1 skipped regions %d\n", tc.filteredRegions); !strings.Contains(out, w) {
				t.Errorf("C filtered: no %q in %q", w, out)
			}
			if tc.streamStops {
				var soff int64
				_, rest, _ := strings.Cut(out, "stream error -4 offset ")
				if _, err := fmt.Sscanf(rest, "%d", &soff); err != nil || soff < start || soff >= start+pack.FrameHeaderSize {
					t.Errorf("C from a stream: want EDR_ECORRUPT at %d (its header), got %q", start, out)
				}
			} else if w := fmt.Sprintf("stream frames %d messages %d skipped regions 1\n", tc.frames, tc.msgs); !strings.Contains(out, w) {
				t.Errorf("C from a stream: no %q in %q", w, out)
			}
			// the C++ wrapper: the same messages and region
			hout := cRun(t, k, k.hpp, "skip", p)
			if w := fmt.Sprintf("messages %d skipped regions 1 first %d\nstrict error -4 offset ", tc.msgs, start); !strings.HasPrefix(hout, w) {
				t.Errorf("C++: %q, want %q...", hout, w)
			}
			if pyErr != nil {
				return
			}
			out, err := run("..", []string{"EDRPACK_LIB=" + k.lib}, py, "-c", pySkip, p)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("messages %d skipped 1 %d %d\nstrict EDR_ECORRUPT", tc.msgs, tc.regionFrames, start)
			if !strings.Contains(out, want) {
				t.Errorf("python: %q, want %q", out, want)
			}
		})
	}
}

// pySkip reads argv[1] with skip_damaged, then without.
const pySkip = `
import sys
sys.path.insert(0, "sdk/python")
import edrpack
with edrpack.Dump(sys.argv[1], skip_damaged=True) as d:
    n = sum(1 for _ in d.messages())
    s = d.skipped()
    print("messages", n, "skipped", s["regions"], s["frames"], s["first_offset"])
with edrpack.Dump(sys.argv[1]) as d:
    try:
        for _ in d.messages():
            pass
        print("strict eof")
    except edrpack.EdrError as e:
        print("strict", e.name)
`
