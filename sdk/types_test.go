package sdk_test

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/mcap"
)

// typeLine is how the C program's types mode prints a type.
func typeLine(what, topic, enc, name, schemaEnc string, data []byte) string {
	return fmt.Sprintf("%s %s enc=%s name=%s schema=%s len=%d fnv=%016x", what, topic, enc, name, schemaEnc, len(data),
		fnv64a(fnv.New64a().Sum64(), data))
}

// TestCTypesLikeGo (issue #34, items 3-5): the C API gives each topic's
// type, encoding and schema bytes (edr_pack_topics' first_type), and each
// message its type (edr_message.type), as the Go API has them and as
// edr-lite info --json shows them; so do the C++ wrapper and the Python
// package installed from its wheel (iter_messages' schema and channel).
// Before, C and Python saw the schema's name only.
func TestCTypesLikeGo(t *testing.T) {
	k := getKit(t)
	for _, path := range []string{k.demo, k.demoMC, k.rec} {
		// The MCAP export's packed topics are JSON on the wire; read as
		// pack-model messages (mcap.PackReader) they are packed again,
		// with their layouts, as in the pack dump it came from.
		like := path
		if path == k.demoMC {
			like = k.demo
		}
		for _, r := range runners(t, k) {
			t.Run(r.name+"/"+filepath.Base(path), func(t *testing.T) {
				out := r.run("types", path)
				src, err := dumpfile.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer src.Close()
				var want []string
				for _, tp := range src.Topics() {
					ty := tp.Type.OrRaw()
					want = append(want, typeLine("topic", mcap.TopicName(tp.Name, tp.Channel), ty.MessageEncoding, ty.Schema.Name, ty.Schema.Encoding, ty.Schema.Data))
				}
				for _, w := range want {
					if !strings.Contains(out, w+"\n") {
						t.Errorf("C: no line %q in\n%s", w, out)
					}
				}
				// every message carries its topic's type (one type per topic in these dumps)
				for _, w := range want {
					if m := "message" + strings.TrimPrefix(w, "topic"); !strings.Contains(out, m+"\n") {
						t.Errorf("C: no line %q in\n%s", m, out)
					}
				}
				if n := strings.Count(out, "\nmessage "); n != len(want) {
					t.Errorf("C: %d (topic, type) pairs on messages, want %d:\n%s", n, len(want), out)
				}
				// and as the binary shows them
				js, err := run(k.dir, nil, k.bin, "info", "--json", like)
				if err != nil {
					t.Fatal(err)
				}
				var in struct {
					Topics []struct{ Name, Type, Encoding, Schema_encoding string } `json:"topics"`
				}
				if err := json.Unmarshal([]byte(js), &in); err != nil {
					t.Fatal(err)
				}
				for _, tp := range in.Topics {
					if tp.Encoding == "" {
						continue // an untyped topic: info leaves it out
					}
					w := fmt.Sprintf("topic %s enc=%s name=%s schema=%s ", tp.Name, tp.Encoding, tp.Type, tp.Schema_encoding)
					if !strings.Contains(out, w) {
						t.Errorf("C: no line starting %q (info --json) in\n%s", w, out)
					}
				}
			})
		}
	}
}

// TestCFilterLikeCat (issue #34, items 3-5): edr_pack_set_filter (C), the
// C++ wrapper's ranges and Python's iter_messages (the installed wheel)
// select what edr-lite cat --topics/--exclude/--from/--to selects,
// message for message (per-topic counts, bytes and payload checksums), in
// pack, MCAP and recorder dumps; C reads twice (set_filter moves to the
// start of the selection) and clears the filter (NULL). A selection of no
// topic the file holds is EDR_ENOMATCH naming what it holds. Through
// edr_pack_read_records and Python's to_numpy the payloads of a packed
// topic come out as the same bytes.
func TestCFilterLikeCat(t *testing.T) {
	k := getKit(t)
	type sel struct {
		from, to int64 // 0: unset
		topics   []string
	}
	win := func(path string, a, b int64) (int64, int64) {
		ts := seekTimes(t, path)
		first, last := ts[1]+1, ts[2]-1
		return first + (last-first)*a/8, first + (last-first)*b/8
	}
	for _, tc := range []struct {
		name, path, like string
		sels             func() []sel
	}{
		{"demo", k.demo, k.demo, func() []sel {
			a, b := win(k.demo, 2, 5)
			c, d := win(k.demo, 7, 8)
			m1, m2 := messageTimes(t, k.demo, 100), messageTimes(t, k.demo, 700) // inclusive at both ends
			return []sel{{a, b, []string{"vehicle/*", "!vehicle/imu"}}, {0, b, []string{"camera/front"}}, {c, 0, nil},
				{a, a, nil}, {m1, m1, nil}, {m1, m2, nil}, {c, d, []string{"vehicle/speed", "vehicle/imu"}}, {0, 0, []string{"!camera/*"}}}
		}},
		{"mcap", k.demoMC, k.demo, nil},
		{"recorder", k.rec, k.rec, func() []sel {
			a, b := win(k.rec, 1, 6)
			return []sel{{a, b, []string{"lidar"}}, {0, b, []string{"lidar#front"}}, {a, 0, []string{"can/*", "!lidar*"}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sels := tc.sels
			if sels == nil { // the MCAP export: the selections of its pack dump
				sels = func() []sel {
					a, b := win(k.demo, 2, 5)
					return []sel{{a, b, []string{"vehicle/*", "!vehicle/imu"}}, {0, b, []string{"camera/front"}}, {a, a, nil}}
				}
			}
			for _, s := range sels() {
				args := []string{"filter", tc.path, "-", "-"}
				var flags []string
				if s.from != 0 {
					args[2] = strconv.FormatInt(s.from, 10)
					flags = append(flags, "--from", args[2])
				}
				if s.to != 0 {
					args[3] = strconv.FormatInt(s.to, 10)
					flags = append(flags, "--to", args[3])
				}
				var inc, exc []string
				for _, g := range s.topics {
					args = append(args, g)
					if e, ok := strings.CutPrefix(g, "!"); ok {
						exc = append(exc, e)
					} else {
						inc = append(inc, g)
					}
				}
				if len(inc) > 0 {
					flags = append(flags, "--topics", strings.Join(inc, ","))
				}
				if len(exc) > 0 {
					flags = append(flags, "--exclude", strings.Join(exc, ","))
				}
				want := catFigures(t, k, tc.like, flags...) // nil: cat says the selection matches nothing
				for _, r := range runners(t, k) {
					_, msgs, got, _ := parseSummary(t, r.run(args...))
					if want == nil && msgs == 0 {
						continue
					}
					what := fmt.Sprintf("%s filter %v (cat %v)", r.name, args[2:], flags)
					sameFigures(t, what, got, want)
					var n uint64
					for _, f := range want {
						n += f.Messages
					}
					if msgs != n {
						t.Errorf("%s: %d messages, cat %d", what, msgs, n)
					}
				}
			}
			for _, r := range runners(t, k) {
				out := r.run("filter", tc.path, "-", "-", "vehicle/sped", "lidar#back")
				if !strings.HasPrefix(out, "nomatch -8 ") || !strings.Contains(out, "vehicle/sped") || !strings.Contains(out, "holds ") {
					t.Errorf("%s: a filter of no topic the file holds: %q", r.name, out)
				}
			}
		})
	}
	// records: the packed topics' payloads, in chunks, mixed with frame reads
	for _, path := range []string{k.demo, k.demoMC} {
		a, b := win(k.demo, 1, 6)
		for _, w := range [][2]string{{"-", "-"}, {strconv.FormatInt(a, 10), strconv.FormatInt(b, 10)}} {
			flags := []string{"--topics", "vehicle/imu"}
			if w[0] != "-" {
				flags = append(flags, "--from", w[0], "--to", w[1])
			}
			want := catFigures(t, k, k.demo, flags...)["vehicle/imu"] // the MCAP export's, read as pack-model messages
			size := want.Bytes / want.Messages
			line := fmt.Sprintf("records %d fnv %s", want.Messages, want.FNV)
			out := cRun(t, k, k.ctest, "records", path, strconv.FormatUint(size, 10), w[0], w[1], "vehicle/imu")
			if strings.TrimSpace(out) != line {
				t.Errorf("%s %v: C records %q, cat %q", filepath.Base(path), w, out, line)
			}
			// Python's to_numpy: the same records, straight into the array
			if wk := maybeWheel(t, k); wk != nil && wk.numpy {
				if out := wk.pyCheck(t, k, "numpy", path, "vehicle/imu", w[0], w[1]); strings.TrimSpace(out) != line {
					t.Errorf("%s %v: Python to_numpy %q, cat %q", filepath.Base(path), w, out, line)
				}
			}
		}
	}
}

// messageTimes returns the time of the i-th message of path in time order.
func messageTimes(t *testing.T, path string, i int) int64 {
	t.Helper()
	src, err := dumpfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ms := dumpfile.NewMessages(src)
	for j := 0; ; j++ {
		ok, err := ms.Next()
		if err != nil || !ok {
			t.Fatalf("%s: %d messages, want %d: %v", path, j, i+1, err)
		}
		if j == i {
			return ms.Time()
		}
	}
}

// TestCTypedWrite (issue #34, items 3-5): a dump written through
// edr_pack_set_topic_type and edr_pack_write_message (C), the C++
// wrapper's typed topic (edr::writer::topic<T>: the layout's size checked
// against the struct's) or Python's Writer (the installed wheel) — a packed
// layout, a JSON topic on a channel, raw bytes; sequence numbers; an
// attachment — verifies, edr-lite info shows
// its types and attachment, and cat --decode decodes the packed structs
// written; each program reads its records back through a filter. Before,
// a C-written dump showed x-edr-raw.
func TestCTypedWrite(t *testing.T) {
	k := getKit(t)
	for _, r := range runners(t, k) {
		t.Run(r.name, func(t *testing.T) { typedWrite(t, k, r) })
	}
}

// typedWrite is TestCTypedWrite for one program.
func typedWrite(t *testing.T, k *kit, r runner) {
	out := filepath.Join(t.TempDir(), "typed.pack")
	if got := r.run("typed", out); !strings.Contains(got, "typed ok") {
		t.Fatal(got)
	}
	if v, err := run(k.dir, nil, k.bin, "verify", out); err != nil || !strings.Contains(v, "ok") {
		t.Fatalf("verify: %v %s", err, v)
	}
	info, err := run(k.dir, nil, k.bin, "info", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"x-edr-packed  vehicle.State", "json          edr.Note", "calibration.yaml  10B  application/yaml"} {
		if !strings.Contains(info, w) {
			t.Errorf("info does not show %q:\n%s", w, info)
		}
	}
	dec, err := run(k.dir, nil, k.bin, "cat", "--decode", "--topics", "vehicle/state,note", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"data":{"speed":2.5,"gear":5,"wheel":[5,-5,500,-32768],"t":1700000000050000000}`, `"type":"edr.Note","data":{"text":"mark 40"}`} {
		if !strings.Contains(dec, w) {
			t.Errorf("cat --decode: no %s in\n%.2000s", w, dec)
		}
	}
	if n := strings.Count(dec, `"type":"vehicle.State"`); n != 50 {
		t.Errorf("cat --decode: %d messages typed vehicle.State, want 50", n)
	}
}

// TestCLayoutJSON: edr_layout_json lays a layout with every kind of member
// out as offsets, numpy formats and shapes, and refuses a layout without a
// fixed record, one that does not compile and a type that is no layout.
func TestCLayoutJSON(t *testing.T) {
	k := getKit(t)
	out := cRun(t, k, k.ctest, "layout")
	want := `{"name":"every.Kind","size":90,"fields":[` +
		`{"name":"a","offset":0,"type":"u8","format":"|u1","shape":[]},` +
		`{"name":"b","offset":1,"type":"i8","format":"|i1","shape":[]},` +
		`{"name":"ok","offset":2,"type":"bool","format":"|b1","shape":[]},` +
		`{"name":"c","offset":4,"type":"u16be","format":">u2","shape":[]},` +
		`{"name":"d","offset":6,"type":"i32le","format":"<i4","shape":[3],"unit":"mV"},` +
		`{"name":"vin","offset":18,"type":"char[8]","format":"|S8","shape":[]},` +
		`{"name":"p","offset":26,"size":20,"shape":[],"fields":[{"name":"x","offset":0,"type":"f64le","format":"<f8","shape":[],"unit":"m"},{"name":"y","offset":8,"type":"f64be","format":">f8","shape":[]},{"name":"yaw","offset":16,"type":"f32le","format":"<f4","shape":[]}]},` +
		`{"name":"ps","offset":46,"size":20,"shape":[2],"fields":[{"name":"x","offset":0,"type":"f64le","format":"<f8","shape":[],"unit":"m"},{"name":"y","offset":8,"type":"f64be","format":">f8","shape":[]},{"name":"yaw","offset":16,"type":"f32le","format":"<f4","shape":[]}]},` +
		`{"name":"z","offset":86,"type":"f32be","format":">f4","shape":[]}]}`
	if got, _, _ := strings.Cut(out, "\n"); got != want {
		t.Errorf("layout JSON:\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(out, "layout ok") {
		t.Error(out)
	}
}

// TestCppWrapperMisuse (issue #34, item 4): the C++ wrapper refuses what
// would be a quiet wrong answer, with an edr::error: a second range on one
// reader ends the first (its next step throws, no shared cursor), a range
// is one pass, a topic typo is EDR_ENOMATCH listing the file's topics, a
// missing file names its path; a moved-from reader holds nothing.
func TestCppWrapperMisuse(t *testing.T) {
	k := getKit(t)
	if out := cRun(t, k, k.hpp, "misuse", k.demo); !strings.Contains(out, "misuse ok") {
		t.Fatal(out)
	}
}

// TestCThreadErrorsFreed (issue #34, item 3): the message of a thread's
// last failure without a handle is freed when the thread exits. Before, it
// sat in a __thread pointer and LeakSanitizer reported 52 to 65 bytes for
// every thread that had failed a call (the program below runs under ASan
// with leak detection: a leak fails it).
func TestCThreadErrorsFreed(t *testing.T) {
	k := getKit(t)
	if out := cRun(t, k, k.ctest, "threads", "20"); !strings.Contains(out, "threads 20 ok") {
		t.Fatal(out)
	}
}
