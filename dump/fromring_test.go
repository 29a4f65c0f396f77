package dump

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// seqPayload writes into buf a payload of n bytes (n >= 13) that carries
// its topic, its sequence number and a CRC32C of the rest.
func seqPayload(buf []byte, topic byte, seq uint64, n int) []byte {
	p := buf[:n]
	p[0] = topic
	binary.LittleEndian.PutUint64(p[1:], seq)
	x := uint32(seq)*2654435761 | 1
	for i := 9; i < n-4; i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p[i] = byte(x)
	}
	binary.LittleEndian.PutUint32(p[n-4:], crc32.Checksum(p[:n-4], castagnoli))
	return p
}

// checkSeqPayload returns the topic and sequence number p carries, or an
// error when its CRC does not match (a torn payload).
func checkSeqPayload(p []byte) (byte, uint64, error) {
	n := len(p)
	if n < 13 || crc32.Checksum(p[:n-4], castagnoli) != binary.LittleEndian.Uint32(p[n-4:]) {
		return 0, 0, fmt.Errorf("torn payload of %d bytes", n)
	}
	return p[0], binary.LittleEndian.Uint64(p[1:]), nil
}

// seqSize is the payload size of message seq: one in five small (100 to
// 399 bytes), the others 4 to 20 KiB. The pack writer borrows them but the
// smallest (FromRingMin), the MCAP writer those of 16 KiB and more
// (MCAPFromRingMin): fromRingWriter.min.
func seqSize(seq uint64) int {
	if seq%5 == 0 {
		return 100 + int(seq%300)
	}
	return 4<<10 + int(seq*7919%(16<<10))
}

// dumpedTopic is what a dump file holds of one topic.
type dumpedTopic struct {
	messages, bytes uint64
	firstNs, lastNs int64
	seqs            []uint64
}

// checkSeqDump verifies the pack dump at path (pack.Verify: every frame's
// CRCs) and every message's payload (its own CRC, its topic's name, its
// sequence number increasing per topic), and returns what each topic holds
// and the dump info.
func checkSeqDump(t *testing.T, path string, names map[byte]string) (map[string]*dumpedTopic, dumpinfo.Info) {
	t.Helper()
	if strings.HasSuffix(path, MCAPExt) {
		return checkSeqMCAP(t, path, names)
	}
	rep, err := pack.Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 || !rep.Complete {
		t.Fatalf("%s: complete %v, problems %v", path, rep.Complete, rep.Problems)
	}
	pr, err := pack.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	got := map[string]*dumpedTopic{}
	f := pack.NewFrame(0, 0)
	for {
		if err := pr.ReadInto(f); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for i := range f.Len() {
			m := f.Message(i)
			tallySeq(t, path, names, got, m.Name, m.DoneTs, f.Data(i))
		}
	}
	info, ok := pr.DumpInfo()
	if !ok {
		t.Fatalf("%s has no dump info", path)
	}
	return got, info
}

// tallySeq checks the payload of a message of topic name (captured at
// doneNs) in the dump at path, as checkSeqDump says, and adds it to got.
func tallySeq(t *testing.T, path string, names map[byte]string, got map[string]*dumpedTopic, name string, doneNs int64, data []byte) {
	t.Helper()
	tp, seq, err := checkSeqPayload(data)
	if err != nil || names[tp] != name {
		t.Fatalf("%s: message of %s at %d: %v (topic byte %d)", path, name, doneNs, err, tp)
	}
	g := got[name]
	if g == nil {
		g = &dumpedTopic{firstNs: doneNs}
		got[name] = g
	}
	if n := len(g.seqs); n > 0 && seq <= g.seqs[n-1] {
		t.Fatalf("%s: %s seq %d after %d", path, name, seq, g.seqs[n-1])
	}
	g.seqs = append(g.seqs, seq)
	g.messages++
	g.bytes += uint64(len(data))
	g.lastNs = doneNs
}

// checkSeqMCAP is checkSeqDump of an MCAP dump: mcap.Doctor finds nothing
// wrong (every CRC, the message indexes, the statistics, the summary), and
// every message's payload is checked, in file order.
func checkSeqMCAP(t *testing.T, path string, names map[byte]string) (map[string]*dumpedTopic, dumpinfo.Info) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if probs := mcap.Doctor(path, b, mcap.ReaderOptions{}); len(probs) > 0 {
		t.Fatalf("%s: mcap doctor: %v", path, probs)
	}
	mr, err := mcap.Open(path, mcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	pr, err := mcap.NewPackReader(mr)
	if err != nil {
		t.Fatal(err)
	}
	pr.FileOrder()
	got := map[string]*dumpedTopic{}
	for {
		ok, err := pr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		m := pr.Message()
		tallySeq(t, path, names, got, m.Name, m.DoneTs, m.Data)
	}
	info, ok := pr.DumpInfo()
	if !ok {
		t.Fatalf("%s has no dump info", path)
	}
	return got, info
}

// checkAccount: the dump info's figures of each topic are what the file
// holds (messages, bytes, first and last capture times).
func checkAccount(t *testing.T, got map[string]*dumpedTopic, info dumpinfo.Info) {
	t.Helper()
	for _, a := range info.Topics {
		name, _ := pack.SplitTopic(a.Topic)
		g := got[name]
		if g == nil {
			g = &dumpedTopic{}
		}
		if a.Messages != g.messages || a.Bytes != g.bytes || g.messages > 0 && (a.FirstNs != g.firstNs || a.LastNs != g.lastNs) {
			t.Fatalf("%s: info says %d messages, %d bytes, %d..%d; the file holds %d, %d, %d..%d",
				a.Topic, a.Messages, a.Bytes, a.FirstNs, a.LastNs, g.messages, g.bytes, g.firstNs, g.lastNs)
		}
	}
}

// fromRingWriter is a default writer that takes payloads from the rings
// (the pack writer, or the MCAP one when mcap), remembering the writers it
// made so a test can read how many frames or chunks were torn.
type fromRingWriter struct {
	mcap    bool
	signer  *evidence.Signer // signs the dumps (Config.Signer)
	mu      sync.Mutex
	writers []*packWriter
	mcaps   []*mcapDump
}

func (fw *fromRingWriter) new(path string, opts WriterOptions) (Writer, error) {
	if fw.mcap {
		w, err := NewMCAPWriter(path, opts)
		if md, ok := w.(*mcapDump); ok {
			if !md.fromRing {
				return nil, fmt.Errorf("the MCAP dump writer does not take payloads from the rings")
			}
			fw.mu.Lock()
			fw.mcaps = append(fw.mcaps, md)
			fw.mu.Unlock()
		}
		return w, err
	}
	w, err := NewPackWriteWriter(path, opts)
	if pw, ok := w.(*packWriter); ok {
		fw.mu.Lock()
		fw.writers = append(fw.writers, pw)
		fw.mu.Unlock()
	}
	return w, err
}

// min is the payload size from which the writer borrows.
func (fw *fromRingWriter) min() int {
	if fw.mcap {
		return MCAPFromRingMin
	}
	return FromRingMin
}

func (fw *fromRingWriter) ext() string {
	if fw.mcap {
		return MCAPExt
	}
	return PackExt
}

func (fw *fromRingWriter) torn() uint64 {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	var n uint64
	for _, w := range fw.writers {
		n += w.torn
	}
	for _, w := range fw.mcaps {
		n += w.torn
	}
	return n
}

// fromRingWriters runs f with each writer that takes payloads from the
// rings: pack (frames) and mcap (chunks).
func fromRingWriters(t *testing.T, f func(t *testing.T, fw *fromRingWriter)) {
	for _, mc := range []bool{false, true} {
		name := "pack"
		if mc {
			name = "mcap"
		}
		t.Run(name, func(t *testing.T) { f(t, &fromRingWriter{mcap: mc}) })
	}
}

// TestFromRingTornFrameRewritten: a producer overwrites the ring between a
// borrowing frame's write and its check (deterministically, from the
// writer's hook): the frame is taken back and written again without the
// overwritten messages; every message in the file is intact, the file
// verifies, the dump info's figures are the file's, and the window's
// messages not written are counted overwritten, exactly
// (written + overwritten = the window's messages), also in the topic's
// LostToReaders, as the copying writer counts a torn copy.
func TestFromRingTornFrameRewritten(t *testing.T) {
	fromRingWriters(t, fromRingTorn)
}

func fromRingTorn(t *testing.T, fw *fromRingWriter) {
	r, vc, _ := dumpRecorder(t, rigConfig{
		Rec:  engine.Config{TopicBytes: 256 << 10, Pre: new(time.Hour), Post: new(time.Duration(0)), Guard: new(time.Duration(0))},
		Dump: Config{NewWriter: fw.new, Extension: fw.ext(), FrameSize: 64 << 10, Signer: fw.signer},
	})
	defer r.Close()
	ids := discover(t, r, "a")
	id := ids["a"]
	buf := make([]byte, 32<<10)
	seq := uint64(0)
	in := func() {
		vc.Advance(time.Millisecond)
		if !r.Ingest(id, 0, seqPayload(buf, 1, seq, seqSize(seq))) {
			t.Errorf("ingest %d refused", seq) // also on the dumper's goroutine (the hook)
		}
		seq++
	}
	for range 20 { // well inside the ring: nothing evicted before the dump
		in()
	}
	window := seq
	hooked := 0
	afterProvisionalWrite = func() {
		if hooked++; hooked == 1 {
			vc.Advance(time.Second) // after the window
			for range 8 {           // over the oldest messages, the first frame's
				in()
			}
		}
	}
	defer func() { afterProvisionalWrite = nil }()
	lost0 := r.Topics()[id].Counters.LostToReaders
	tid, err := r.Trigger(TriggerParams{Reason: "torn"})
	if err != nil {
		t.Fatal(err)
	}
	res := wait(t, r, tid)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if fw.torn() != 1 || res.Rewritten != 1 || r.Status().Rewritten != 1 {
		t.Fatalf("%d frames torn, result says %d rewritten, status %d; want 1 (the producer overwrote the first)",
			fw.torn(), res.Rewritten, r.Status().Rewritten)
	}
	got, info := checkSeqDump(t, res.Path, map[byte]string{1: "a"})
	checkAccount(t, got, info)
	if fw.signer != nil { // the hash followed the frame taken back
		keys := &evidence.Keyring{}
		keys.Add(fw.signer.Public())
		f, err := ReadSeal(res.Path)
		if err != nil {
			t.Fatal(err)
		}
		if v := evidence.Judge(f, keys); !v.OK() {
			t.Fatalf("signed dump with a frame taken back: %s", v.Summary())
		}
	}
	a := info.Topics[0]
	if a.Overwritten == 0 || a.Messages+a.Overwritten != window || res.Lost != a.Overwritten {
		t.Fatalf("written %d + overwritten %d (result %d), want some overwritten and %d in all", a.Messages, a.Overwritten, res.Lost, window)
	}
	if lost := r.Topics()[id].Counters.LostToReaders - lost0; lost < a.Overwritten {
		t.Fatalf("LostToReaders grew by %d, the dump lost %d", lost, a.Overwritten)
	}
	// The ones left out are the oldest borrowed ones (a copied small one
	// among them was copied intact before the producer came).
	held := map[uint64]bool{}
	for _, s := range got["a"].seqs {
		held[s] = true
	}
	var out []uint64
	for s := range window {
		if !held[s] {
			out = append(out, s)
		}
	}
	if uint64(len(out)) != a.Overwritten || len(held) != int(a.Messages) || out[len(out)-1] >= 10 {
		t.Fatalf("the file lacks seqs %v of the window's %d, the info says %d overwritten", out, window, a.Overwritten)
	}
	for _, s := range out {
		if seqSize(s) < fw.min() {
			t.Fatalf("seq %d, copied, left out", s)
		}
	}
}

// TestFromRingStress: producers overwrite their small rings as fast as they
// can while dump after dump is written from the ring slices (the default writer,
// small frames); every message of every dump is intact (its own CRC, its topic,
// increasing sequence numbers), every file verifies and each dump's
// figures are its file's. A torn message never reaches a dump.
func TestFromRingStress(t *testing.T) {
	fromRingWriters(t, fromRingStress)
}

func fromRingStress(t *testing.T, fw *fromRingWriter) {
	dumps := 30
	if testing.Short() {
		dumps = 8
	}
	r, err := newRig(t, rigConfig{
		Rec: engine.Config{CacheSize: 4 << 20, TopicBytes: 512 << 10, Pre: new(time.Hour), Post: new(time.Duration(0)), Guard: new(time.Duration(0))},
		Dump: Config{Dir: filepath.Join(t.TempDir(), "dumps"), NewWriter: fw.new, Extension: fw.ext(), FrameSize: 64 << 10,
			PollInterval: time.Millisecond, MaxFiles: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	names := map[byte]string{1: "p1", 2: "p2"}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var written [3]atomic.Uint64
	for tp, name := range names {
		id, err := r.Discover(ingest.TopicInfo{Name: name, Type: ingest.Raw("test/seq")})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			for seq := uint64(0); !stop.Load(); seq++ {
				r.Ingest(id, 0, seqPayload(buf, tp, seq, seqSize(seq)))
				written[tp].Store(seq + 1)
			}
		}()
	}
	for written[1].Load() < 1000 || written[2].Load() < 1000 {
		time.Sleep(time.Millisecond) // let the rings fill and wrap
	}
	var messages, lost, rewritten uint64
	for i := range dumps {
		tid, err := r.Trigger(TriggerParams{Reason: "stress"})
		if err != nil {
			t.Fatal(err)
		}
		res := wait(t, r, tid)
		if res.Err != nil {
			if errors.Is(res.Err, ErrStopped) {
				t.Fatal(res.Err)
			}
			t.Fatalf("dump %d: %v", i, res.Err)
		}
		got, info := checkSeqDump(t, res.Path, names)
		checkAccount(t, got, info)
		messages += res.Messages
		lost += res.Lost
		rewritten += res.Rewritten
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d dumps: %d messages written, %d lost to the producers; %d frames torn and written again; %d + %d messages ingested",
		dumps, messages, lost, fw.torn(), written[1].Load(), written[2].Load())
	if rewritten != fw.torn() || r.Status().Rewritten != rewritten {
		t.Fatalf("the results say %d rewritten, the status %d, the writers %d", rewritten, r.Status().Rewritten, fw.torn())
	}
	if messages == 0 {
		t.Fatal("no message dumped")
	}
}
