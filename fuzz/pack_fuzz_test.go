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
	})
}

// FuzzPackMeta decodes arbitrary bytes as a frame meta; whatever decodes
// must re-encode to bytes that decode to the same values, and encoding is
// stable (encode(decode(encode(x))) == encode(x)).
func FuzzPackMeta(f *testing.F) {
	fr := pack.NewFrame(7, 123456789)
	fr.AddMetaWithData("a", "b", []byte("meta"), 1, 2, []byte("data"))
	f.Add(fr.AppendMeta(nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var a pack.Frame
		if err := a.UnmarshalMeta(data); err != nil {
			if a.Len() != 0 || a.ID() != 0 {
				t.Fatal("error left a partial frame")
			}
			return
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
