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
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/clock"
	"github.com/edr-lite/edr-lite/internal/dumpfile"
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
	cstatic string // edrpack_test.c against the c-archive, no ASan
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
		ctest: filepath.Join(dir, "ctest"), cctest: filepath.Join(dir, "cctest"), cstatic: filepath.Join(dir, "cstatic")}
	cgo := []string{"CGO_ENABLED=1"}
	steps := [][]string{
		{"go", "build", "-buildmode=c-shared", "-o", k.lib, "./sdk/libedrpack"},
		{"go", "build", "-buildmode=c-archive", "-o", filepath.Join(dir, "libedrpack.a"), "./sdk/libedrpack"},
		{"go", "build", "-o", k.bin, "./cmd/edr-lite"},
		{cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-g", "-fsanitize=address", "-fno-omit-frame-pointer", "-Isdk/include",
			"sdk/test/edrpack_test.c", "-L" + dir, "-ledrpack", "-Wl,-rpath," + dir, "-o", k.ctest},
		{cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-g", "-fsanitize=address", "-fno-omit-frame-pointer", "-Isdk/include",
			"sdk/test/edrpack_test.cc", "-L" + dir, "-ledrpack", "-Wl,-rpath," + dir, "-o", k.cctest},
		{cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-Isdk/include", "sdk/test/edrpack_test.c",
			filepath.Join(dir, "libedrpack.a"), "-lpthread", "-ldl", "-lm", "-o", k.cstatic},
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
	out, err = run(k.dir, nil, k.bin, "cat", "--jsonl", path)
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
	topics = map[string]topicFigures{}
	for name, a := range accs {
		topics[name] = topicFigures{a.n, a.b, fmt.Sprintf("%016x", a.h)}
	}
	return in.Messages, topics, info
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
			ways := [][]string{{k.ctest, "mem", tc.path}, {k.cctest, tc.path}, {k.cstatic, "summary", tc.path}}
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
	var f pack.Frame
	for r.ReadMetaInto(&f) == nil {
		ts = append(ts, f.Time()-1, f.Time(), f.Time()+1)
	}
	return ts
}

// TestCSeekTimeLikeGo: edr_pack_seek_time lands on the frame pack.Reader's
// SeekTime lands on (pack), on the message mcap.PackReader's SeekTime does
// (MCAP).
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
		lines := strings.Split(strings.TrimSpace(cRun(t, k, k.ctest, args...)), "\n")
		if len(lines) != len(ts) {
			t.Fatalf("%s: %d lines for %d times", path, len(lines), len(ts))
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
	good := smallFrames(t, k.demo)
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
				if code != -5 || !strings.Contains(out, "not a pack, MCAP or MP4 file") {
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

// TestPythonModule: sdk/python/edrpack.py (ctypes, stdlib only) reads the
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
	pick := []int64{ts[3], ts[len(ts)/2], ts[len(ts)-2]}
	for _, path := range []string{k.demo, k.demoMC} {
		args := []string{"sdk/python/edrpack_check.py", path}
		for _, x := range pick {
			args = append(args, strconv.FormatInt(x, 10))
		}
		out, err := run("..", []string{"EDRPACK_LIB=" + k.lib}, py, args...)
		if err != nil {
			t.Fatal(err)
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
