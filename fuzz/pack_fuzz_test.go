package fuzz

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/hostile"
	"github.com/edr-lite/edr-lite/pack"
	"google.golang.org/protobuf/encoding/protowire"
)

// packSeed returns a small valid pack file with the given codec: a few
// frames of compressible and incompressible data, and dump info.
func packSeed(c pack.Compression, frames int) []byte {
	var buf bytes.Buffer
	w, err := pack.NewStreamWriter(&buf, pack.WriterOptions{Writer: "seed", CreatedNs: 1, Compression: c})
	if err != nil {
		panic(err)
	}
	speed := ingest.Type{MessageEncoding: ingest.EncodingPacked,
		Schema: ingest.Schema{Name: "v.Speed", Encoding: ingest.SchemaLayout, Data: []byte("f32le speed (m/s)")}}
	for i := 0; i < frames; i++ {
		t := int64(1_000_000_000 + i*10_000_000)
		// Type sections: speed packed then JSON (a change), cam raw, noise
		// sharing speed's first type (a reference).
		switch i {
		case 0:
			w.SetTopicType("speed", "can0", speed, t)
			w.SetTopicType("cam", "", ingest.Raw("jpeg"), t)
		case 1:
			w.SetTopicType("noise", "x", speed, t)
			w.SetTopicType("speed", "can0", ingest.Type{MessageEncoding: ingest.EncodingJSON}, t)
		}
		f := pack.NewFrame(uint64(i), t)
		f.SetDoneTime(t + 5)
		f.AddMeta("speed", "can0", []byte{byte(i), 1, 2}, t, t+1)
		f.AddMetaWithData("cam", "", []byte("jpg"), t+1, t+2, bytes.Repeat([]byte{byte(i), 7}, 40))
		f.AddMetaWithData("noise", "x", nil, t+2, t+3, []byte(fmt.Sprintf("%x", i*7919)))
		if i == 0 && c != pack.CompressNone {
			// compresses far beyond 1000:1 (stored compressed all the same)
			f.AddMetaWithData("blank", "", nil, t+3, t+4, make([]byte, 256<<10))
		}
		if err := w.WriteFrame(f); err != nil {
			panic(err)
		}
	}
	w.SetDumpInfo(dumpinfo.Info{Writer: "seed", Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "seed", TimeNs: 1}}})
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// packSeeds: valid files of each codec, truncated and bit-flipped variants.
func packSeeds() map[string][]byte {
	out := map[string][]byte{}
	for _, c := range []pack.Compression{pack.CompressNone, pack.CompressLZ4, pack.CompressZstd} {
		good := packSeed(c, 3)
		out["valid_"+c.String()] = good
		out["truncated_"+c.String()] = good[:len(good)*2/3]
		flipped := bytes.Clone(good)
		flipped[pack.HeaderSize+pack.FrameHeaderSize+3] ^= 0x10 // inside frame 0's meta
		out["bitflip_"+c.String()] = flipped
	}
	out["empty_file"] = packSeed(pack.CompressNone, 0)
	return out
}

func addPackSeeds(f *testing.F) {
	for _, b := range packSeeds() {
		f.Add(b)
	}
	addHostile(f, ".pack")
}

// addHostile seeds a target with the crafted cases of internal/hostile
// whose name ends with ext and that are small (the large ones, tens of MB,
// run through every verb in cmd/edr-lite's TestHostileInputs).
func addHostile(f *testing.F, ext string) {
	for _, c := range hostile.Cases() {
		if strings.HasSuffix(c.Name, ext) && c.Small() {
			f.Add(c.Bytes())
		}
	}
}

// TestWritePackSeedCorpus regenerates testdata/fuzz/Fuzz{PackFile,PackRecover,PackStream}
// when PACK_WRITE_SEEDS=1.
func TestWritePackSeedCorpus(t *testing.T) {
	if os.Getenv("PACK_WRITE_SEEDS") != "1" {
		t.Skip("set PACK_WRITE_SEEDS=1 to regenerate the pack seed corpora")
	}
	for _, target := range []string{"FuzzPackFile", "FuzzPackRecover", "FuzzPackStream"} {
		dir := filepath.Join("testdata", "fuzz", target)
		os.MkdirAll(dir, 0o755)
		for name, b := range packSeeds() {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzPackMeta")
	os.MkdirAll(dir, 0o755)
	f := pack.NewFrame(7, 123456789)
	f.SetType(pack.FreeSync)
	f.SetVersion("v1")
	f.AddMetaWithData("a", "b", []byte("meta"), 1, 2, []byte("data"))
	f.AddMeta("c", "", nil, -5, 0)
	os.WriteFile(filepath.Join(dir, "frame"), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", f.AppendMeta(nil))), 0o644)
}

// FuzzPackFile feeds arbitrary bytes to the reader and Verify as a hostile
// pack file: no panic; errors are *CorruptError (or io.EOF at the end) with
// no partial frame; data handed out is bounded by the input size; and a
// file Verify calls complete and clean reads to the end without error.
func FuzzPackFile(f *testing.F) {
	addPackSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v := pack.VerifyBytes("fuzz.pack", data)
		r, err := pack.NewBytesReader("fuzz.pack", data, pack.ReaderOptions{})
		if err != nil {
			if r != nil {
				t.Fatal("error with a partial result")
			}
			if v.OK() {
				t.Fatalf("Open fails (%v) but Verify finds no problem", err)
			}
			return
		}
		defer r.Close()
		s := r.Summary()
		if _, err := r.Types(); err != nil {
			var ce *pack.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Types error %T %v is not a *CorruptError", err, err)
			}
			if v.OK() {
				t.Fatalf("Types fails (%v) but Verify finds no problem", err)
			}
		}
		_ = r.MetadataNames()
		_, _ = r.DumpInfo()
		var fr pack.Frame
		frames, total := 0, 0
		for {
			err := r.ReadInto(&fr)
			if err == io.EOF {
				break
			}
			if err != nil {
				var ce *pack.CorruptError
				if !errors.As(err, &ce) {
					t.Fatalf("read error %T %v is not a *CorruptError", err, err)
				}
				if fr.Len() != 0 || fr.NumBlocks() != 0 {
					t.Fatal("error left a partial frame")
				}
				if v.OK() {
					t.Fatalf("read fails (%v) but Verify finds no problem", err)
				}
				break
			}
			frames++
			total += fr.DataSize()
			if total > len(data)*pack.MaxCompressionRatio {
				t.Fatalf("%d data bytes from a %d-byte file", total, len(data))
			}
		}
		if v.OK() && v.Complete && (frames != v.Frames || s.Frames != v.Frames) {
			t.Fatalf("clean file: read %d frames, summary %d, verify %d", frames, s.Frames, v.Frames)
		}
		r.Rewind()
		for r.ReadMetaInto(&fr) == nil {
		}
		if s.Frames > 0 {
			_ = r.SeekTime(s.FirstNs + (s.LastNs-s.FirstNs)/2)
			_ = r.ReadInto(&fr)
		}
		// Reading past damage (issue #31, item 5): never an error but
		// the end, never more frames than Verify's intact ones (it walks
		// the same way), the data bounded, what was skipped counted.
		sr, err := pack.NewBytesReader("fuzz.pack", data, pack.ReaderOptions{SkipDamaged: true})
		if err != nil {
			return
		}
		defer sr.Close()
		if _, err := sr.Types(); err != nil {
			t.Fatalf("Types with SkipDamaged: %v", err)
		}
		frames, total = 0, 0
		for {
			err := sr.ReadInto(&fr)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read with SkipDamaged: %v", err)
			}
			frames++
			total += fr.DataSize()
			if total > len(data)*pack.MaxCompressionRatio || frames > len(data)/pack.FrameHeaderSize {
				t.Fatalf("%d frames, %d data bytes from a %d-byte file", frames, total, len(data))
			}
		}
		if sk := sr.Skipped(); v.OK() && sk.Any() {
			t.Fatalf("Verify finds no problem, SkipDamaged skipped %+v", sk)
		}
	})
}

// FuzzPackMeta decodes arbitrary bytes as a frame meta; it must decode
// exactly what a plain protowire decoding of frame.v2.proto does (the same
// values, an error for the same inputs: the fast paths for the writer's
// layout change nothing), whatever decodes must re-encode to bytes that
// decode to the same values, and encoding is stable
// (encode(decode(encode(x))) == encode(x)).
func FuzzPackMeta(f *testing.F) {
	fr := pack.NewFrame(7, 123456789)
	fr.AddMetaWithData("a", "b", []byte("meta"), 1, 2, []byte("data"))
	f.Add(fr.AppendMeta(nil))
	f.Add([]byte{})
	// The replay gate's layout: nanosecond times (nine-byte varints), four
	// topics taking turns, data indexes of one and two bytes; and the same
	// with a negative time (a ten-byte varint) and a channel.
	fr = pack.NewFrame(1, 1_700_000_000_000_000_000)
	for i := 0; i < 130; i++ {
		ts := int64(1_700_000_000_000_000_000) + int64(i)*1000
		fr.AddMetaBorrowed(fmt.Sprintf("topic/%d", i%4), "", nil, ts, ts, []byte{1})
	}
	f.Add(fr.AppendMeta(nil))
	fr = pack.NewFrame(1, 2)
	fr.AddMetaBorrowed("topic/0", "c", nil, -5, 1<<62, []byte{1})
	fr.AddMetaBorrowed("", "", nil, 1<<56, 1<<63-1, nil)
	f.Add(fr.AppendMeta(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		var a pack.Frame
		err := a.UnmarshalMeta(data)
		want, wantOK := referenceMeta(data)
		if (err == nil) != wantOK {
			t.Fatalf("UnmarshalMeta: %v; protowire decodes: %v", err, wantOK)
		}
		if err != nil {
			if a.Len() != 0 || a.ID() != 0 {
				t.Fatal("error left a partial frame")
			}
			return
		}
		if a.ID() != want.id || a.Time() != want.timeNs || a.DoneTime() != want.doneNs || a.Type() != want.typ ||
			a.Version() != want.version || a.ProtoVersion() != want.protoVersion || a.Len() != len(want.msgs) {
			t.Fatalf("frame fields differ from protowire's decoding")
		}
		for i := range want.msgs {
			x, y := a.Message(i), want.msgs[i]
			if x.Name != y.Name || x.Channel != y.Channel || !bytes.Equal(x.Meta, y.Meta) || x.GenTs != y.GenTs ||
				x.DoneTs != y.DoneTs || x.DataIndex != y.DataIndex || x.HasSeq != y.HasSeq || x.Seq != y.Seq {
				t.Fatalf("message %d: %+v, protowire decodes %+v", i, x, y)
			}
		}
		enc := a.AppendMeta(nil)
		if len(enc) != a.MetaSize() {
			t.Fatalf("MetaSize %d, encoded %d", a.MetaSize(), len(enc))
		}
		var b pack.Frame
		if err := b.UnmarshalMeta(enc); err != nil {
			t.Fatalf("re-encoded meta does not decode: %v", err)
		}
		if a.ID() != b.ID() || a.Time() != b.Time() || a.DoneTime() != b.DoneTime() || a.Type() != b.Type() ||
			a.Version() != b.Version() || a.ProtoVersion() != b.ProtoVersion() || a.Len() != b.Len() {
			t.Fatalf("round trip changed the frame header")
		}
		for i := 0; i < a.Len(); i++ {
			x, y := a.Message(i), b.Message(i)
			if x.Name != y.Name || x.Channel != y.Channel || !bytes.Equal(x.Meta, y.Meta) ||
				x.GenTs != y.GenTs || x.DoneTs != y.DoneTs || x.DataIndex != y.DataIndex {
				t.Fatalf("round trip changed message %d: %+v -> %+v", i, x, y)
			}
		}
		if enc2 := b.AppendMeta(nil); !bytes.Equal(enc, enc2) {
			t.Fatal("encoding is not stable")
		}
	})
}

// FuzzPackRecover recovers arbitrary bytes: the output always verifies and
// is complete, and holds exactly the frames Recover says it salvaged.
func FuzzPackRecover(f *testing.F) {
	addPackSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		rep, err := pack.RecoverTo("fuzz.pack", data, func(o pack.WriterOptions) (*pack.Writer, error) {
			return pack.NewStreamWriter(&out, o)
		})
		if err != nil {
			if errors.Is(err, pack.ErrUnsupportedVersion) {
				return
			}
			t.Fatalf("recover: %v", err)
		}
		v := pack.VerifyBytes("recovered.pack", out.Bytes())
		if !v.OK() || !v.Complete {
			t.Fatalf("recovered file does not verify: %v", v.Problems)
		}
		if v.Frames != rep.Frames {
			t.Fatalf("recovered %d frames, file holds %d", rep.Frames, v.Frames)
		}
		if rep.LostBytes > int64(len(data)) {
			t.Fatalf("lost %d bytes of a %d-byte file", rep.LostBytes, len(data))
		}
	})
}

// FuzzPackStream reads arbitrary bytes as a pack stream (pack.StreamReader
// over an io.Reader that returns short reads): no panic; errors are
// *CorruptError or io.EOF with no partial frame; every frame it returns is
// the frame the mmap reader returns at that place (the stream never shows
// bytes the file reader would not); and a file Verify calls complete and
// clean streams to the end without error.
func FuzzPackStream(f *testing.F) {
	addPackSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v := pack.VerifyBytes("fuzz.pack", data)
		s, err := pack.NewStreamReader(iotest.HalfReader(bytes.NewReader(data)))
		if err != nil {
			if s != nil {
				t.Fatal("error with a partial result")
			}
			if v.OK() {
				t.Fatalf("stream fails (%v) but Verify finds no problem", err)
			}
			return
		}
		defer s.Close()
		r, rerr := pack.NewBytesReader("fuzz.pack", data, pack.ReaderOptions{})
		if rerr != nil {
			t.Fatalf("stream reads the header, file reader does not: %v", rerr)
		}
		defer r.Close()
		var sf, rf pack.Frame
		frames := 0
		for {
			err := s.ReadInto(&sf)
			if err == io.EOF {
				break
			}
			if err != nil {
				var ce *pack.CorruptError
				if !errors.As(err, &ce) {
					t.Fatalf("read error %T %v is not a *CorruptError", err, err)
				}
				if sf.Len() != 0 || sf.NumBlocks() != 0 {
					t.Fatal("error left a partial frame")
				}
				if v.OK() && v.Complete {
					t.Fatalf("stream fails (%v) but Verify finds a complete, clean file", err)
				}
				break
			}
			frames++
			if err := r.ReadInto(&rf); err != nil {
				t.Fatalf("stream frame %d, file reader: %v", frames, err)
			}
			if !bytes.Equal(sf.AppendMeta(nil), rf.AppendMeta(nil)) || sf.NumBlocks() != rf.NumBlocks() {
				t.Fatalf("frame %d differs between stream and file reader", frames)
			}
			for i := 0; i < sf.NumBlocks(); i++ {
				if !bytes.Equal(sf.Block(i), rf.Block(i)) {
					t.Fatalf("frame %d block %d differs between stream and file reader", frames, i)
				}
			}
		}
		if v.OK() && v.Complete && frames != v.Frames {
			t.Fatalf("clean file: streamed %d frames, verify %d", frames, v.Frames)
		}
		if v.OK() && v.Complete {
			rt, err := r.Types()
			st := s.Types()
			if err != nil || len(rt) != len(st) || len(st) != v.Types {
				t.Fatalf("clean file: %d types streamed, %d read (%v), %d verified", len(st), len(rt), err, v.Types)
			}
			for i := range st {
				if !st[i].Type.Equal(rt[i].Type) || st[i].Offset != rt[i].Offset {
					t.Fatalf("type section %d differs between stream and file reader", i)
				}
			}
		}
	})
}

// refFrame is a frame meta as referenceMeta decodes it.
type refFrame struct {
	id             uint64
	timeNs, doneNs int64
	typ            pack.FrameType
	version        string
	protoVersion   int32
	msgs           []pack.Message
}

// referenceMeta decodes a frame meta (frame.v2.proto) field by field with
// protowire alone, as protobuf does: unknown fields skipped, the last of a
// repeated scalar wins, anything malformed is an error (ok false).
func referenceMeta(b []byte) (f refFrame, ok bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return f, false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return f, false
			}
			f.version, b = string(v), b[n:]
		case num == 5 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return f, false
			}
			m, ok := referenceMessage(v)
			if !ok {
				return f, false
			}
			f.msgs, b = append(f.msgs, m), b[n:]
		case typ == protowire.VarintType && num >= 2 && num <= 7:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return f, false
			}
			switch num {
			case 2:
				f.id = v
			case 3:
				f.timeNs = int64(v)
			case 4:
				f.protoVersion = int32(v)
			case 6:
				f.typ = pack.FrameType(int32(v))
			case 7:
				f.doneNs = int64(v)
			}
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return f, false
			}
			b = b[n:]
		}
	}
	return f, true
}

func referenceMessage(b []byte) (m pack.Message, ok bool) {
	m.DataIndex = pack.NoData
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return m, false
		}
		b = b[n:]
		switch {
		case typ == protowire.BytesType && (num == 1 || num == 2 || num == 5):
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return m, false
			}
			switch num {
			case 1:
				m.Name = string(v)
			case 2:
				m.Meta = v
			case 5:
				m.Channel = string(v)
			}
			b = b[n:]
		case typ == protowire.VarintType && num >= 3 && num <= 7 && num != 5:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return m, false
			}
			switch num {
			case 3:
				m.GenTs = int64(v)
			case 4:
				m.DoneTs = int64(v)
			case 6:
				m.DataIndex = int32(v)
			case 7:
				m.Seq, m.HasSeq = v, true
			}
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return m, false
			}
			b = b[n:]
		}
	}
	return m, true
}
