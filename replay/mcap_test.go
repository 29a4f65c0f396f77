package replay

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
	"github.com/edr-lite/edr-lite/shm"
)

// mcapT0 is the start of the MCAP test dumps.
const mcapT0 = int64(1_764_670_000_000_000_000)

// richPackDump writes a pack dump over 2s with three names, channels,
// types, producer times different from capture times, equal capture times
// across topics, meta bytes on some messages and empty payloads, and its
// dump information (a trigger, accounting with types and losses).
func richPackDump(t *testing.T, name string, offset int64) string {
	var msgs []rec
	for i := range 400 {
		ts := mcapT0 + offset + int64(i)*5e6
		msgs = append(msgs, rec{name: "vehicle/speed", gen: ts - 777, done: ts, data: payload("speed", i, 16)})
		if i%4 == 0 {
			// same capture time as the speed message
			msgs = append(msgs, rec{name: "camera", ch: "front", gen: ts - 30e6, done: ts, data: payload("front", i, 3000)})
		}
		if i%4 == 2 {
			msgs = append(msgs, rec{name: "camera", ch: "rear", gen: ts - 31e6, done: ts + 1, data: payload("rear", i, 2500)})
		}
		if i%3 == 0 {
			var meta []byte
			if i%2 == 0 {
				meta = []byte{0x08, byte(i), 0x10, byte(i >> 8)}
			}
			data := payload("imu", i, 64)
			if i%27 == 0 {
				data = []byte{}
			}
			msgs = append(msgs, rec{name: "imu", ch: "0", gen: ts + 3, done: ts + 2e6, meta: meta, data: data})
		}
	}
	info := &dumpinfo.Info{
		Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "hard-brake", Source: "lua", Rule: "hard_brake", TimeNs: mcapT0 + offset + 1e9,
			PreNs: 1e9, PostNs: 1e9, Params: map[string]string{"decel": "8"}}},
		Topics: []dumpinfo.TopicAccount{
			{Topic: "vehicle/speed#", Type: "edr.Speed", Messages: 400, Overwritten: 2, FirstNs: mcapT0 + offset},
			{Topic: "camera#front", Type: "gray8", Messages: 100, Oversize: 1},
			{Topic: "camera#rear", Type: "gray8", Messages: 100, LostAtSource: 5},
			{Topic: "imu#0", Type: "edr.Imu", Messages: 134, SkippedBusy: 1},
		},
		Writer: "replay test", StartNs: mcapT0 + offset, EndNs: mcapT0 + offset + 2e9,
	}
	return writeDump(t, name, msgs, info)
}

// exportMCAP converts a pack dump with mcap.ExportPack.
func exportMCAP(t *testing.T, packPath, comp string) string {
	t.Helper()
	r, err := pack.Open(packPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := filepath.Join(t.TempDir(), filepath.Base(packPath)+"-"+comp+".mcap")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mcap.ExportPack(r, f, mcap.ExportOptions{Options: mcap.Options{Compression: comp, ChunkSize: 8 << 10}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// replayed is everything a replay handed to its output.
type replayed struct {
	topics []Topic
	msgs   []got
	stats  Stats
}

func replayAll(t *testing.T, paths []string, opts Options) replayed {
	t.Helper()
	p, err := Open(paths, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var r replayed
	r.topics = p.Topics()
	r.stats, err = p.Run(context.Background(), collect(&r.msgs))
	if err != nil {
		t.Fatal(err)
	}
	r.stats.Elapsed = 0
	return r
}

func sameReplay(t *testing.T, what string, got, want replayed) {
	t.Helper()
	if !reflect.DeepEqual(got.topics, want.topics) {
		t.Fatalf("%s: topics\n%+v\nwant\n%+v", what, got.topics, want.topics)
	}
	if len(got.msgs) != len(want.msgs) || got.stats != want.stats {
		t.Fatalf("%s: %d messages (%+v), want %d (%+v)", what, len(got.msgs), got.stats, len(want.msgs), want.stats)
	}
	for i := range want.msgs {
		if !reflect.DeepEqual(got.msgs[i], want.msgs[i]) {
			t.Fatalf("%s: message %d\n got %+v\nwant %+v", what, i, got.msgs[i], want.msgs[i])
		}
	}
}

// TestReplayMCAPLikePack replays a pack dump and its MCAP exports (none,
// lz4, zstd): the same topics with their types and counts, every message
// bit-exact (data, meta, no-data), in the same order, with the same times
// and sequence numbers; also from a start and for a duration, and with an
// MCAP and a pack file merged in one replay.
func TestReplayMCAPLikePack(t *testing.T) {
	a := richPackDump(t, "a.pack", 0)
	b := richPackDump(t, "b.pack", 2500e3) // interleaves with a, some equal times
	want := replayAll(t, []string{a}, Options{})
	if len(want.topics) != 4 || want.topics[0].String() != "camera#front" || want.topics[0].Type.Schema.Name != "gray8" ||
		want.topics[2].Type.Schema.Name != "edr.Imu" || len(want.msgs) != 734 {
		t.Fatalf("pack replay: %d messages, topics %+v", len(want.msgs), want.topics)
	}
	window := Options{Start: 500 * time.Millisecond, Duration: 700 * time.Millisecond}
	wantWindow := replayAll(t, []string{a}, window)
	wantMixed := replayAll(t, []string{b, a}, Options{})
	for _, comp := range []string{mcap.CompressionNone, mcap.CompressionLZ4, mcap.CompressionZstd} {
		t.Run(fmt.Sprintf("compression=%q", comp), func(t *testing.T) {
			am := exportMCAP(t, a, comp)
			sameReplay(t, "mcap", replayAll(t, []string{am}, Options{}), want)
			sameReplay(t, "mcap window", replayAll(t, []string{am}, window), wantWindow)
			sameReplay(t, "pack + mcap", replayAll(t, []string{b, am}, Options{}), wantMixed)
		})
	}
}

// topicMsg is one message of a topic: its producer time and bytes.
type topicMsg struct {
	gen  int64
	data []byte
}

// segmentSink records what a shm segment holds.
type segmentSink struct {
	info ingest.TopicInfo
	msgs []topicMsg
}

func (s *segmentSink) Discover(info ingest.TopicInfo) (ingest.TopicID, error) {
	s.info = info
	return 0, nil
}
func (s *segmentSink) Now() int64 { return 0 }
func (s *segmentSink) IngestAt(_ ingest.TopicID, _, gen int64, b []byte) bool {
	s.msgs = append(s.msgs, topicMsg{gen, bytes.Clone(b)})
	return true
}
func (s *segmentSink) Offline(ingest.TopicID)             {}
func (s *segmentSink) Lost(ingest.TopicID, int64, uint64) {}

// drainingShm is a ShmOutput whose Close first drains every segment, as a
// consumer would before the output removes them.
type drainingShm struct {
	*ShmOutput
	t      *testing.T
	dir    string
	topics []Topic
	out    map[string]*segmentSink
}

func (d *drainingShm) Open(topics []Topic) error {
	d.topics = topics
	return d.ShmOutput.Open(topics)
}

func (d *drainingShm) Close() error {
	for _, tp := range d.topics {
		s := &segmentSink{}
		if _, err := shm.DrainFile(filepath.Join(d.dir, shm.SegmentFileName(tp.Name, tp.Channel)), s, shm.ConsumerOptions{}); err != nil {
			d.t.Error(err)
		}
		d.out[tp.String()] = s
	}
	return d.ShmOutput.Close()
}

// replayToShm replays paths into fresh segments and drains every segment.
func replayToShm(t *testing.T, paths []string) map[string]*segmentSink {
	t.Helper()
	dir := t.TempDir()
	p, err := Open(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := &drainingShm{ShmOutput: NewShm(ShmOptions{Dir: dir, Capacity: 8 << 20, DrainWait: time.Millisecond}), t: t, dir: dir,
		out: map[string]*segmentSink{}}
	st, err := p.Run(context.Background(), out)
	if err != nil || st.Dropped != 0 {
		t.Fatalf("replay to shm: %+v, %v", st, err)
	}
	return out.out
}

// TestReplayMCAPToShm replays a pack dump and its MCAP export into shm
// segments: every segment carries the same name, channel and type and the
// same messages, producer times and bytes, in the same order.
func TestReplayMCAPToShm(t *testing.T) {
	a := richPackDump(t, "a.pack", 0)
	want := replayToShm(t, []string{a})
	if len(want) != 4 || len(want["vehicle/speed"].msgs) != 400 || want["imu#0"].info.Type.Schema.Name != "edr.Imu" {
		t.Fatalf("pack to shm: %+v", want)
	}
	for _, comp := range []string{mcap.CompressionNone, mcap.CompressionZstd} {
		got := replayToShm(t, []string{exportMCAP(t, a, comp)})
		if len(got) != len(want) {
			t.Fatalf("%q: %d segments, want %d", comp, len(got), len(want))
		}
		for topic, w := range want {
			g := got[topic]
			if g == nil || g.info.Name != w.info.Name || g.info.Channel != w.info.Channel || !g.info.Type.Equal(w.info.Type) {
				t.Fatalf("%q: segment %s: %+v, want %+v", comp, topic, g, w.info)
			}
			if !reflect.DeepEqual(g.msgs, w.msgs) {
				t.Fatalf("%q: segment %s: %d messages differ from the pack replay's %d", comp, topic, len(g.msgs), len(w.msgs))
			}
		}
	}
}
