package fuzz

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/mcap"
)

// fuzzMaxChunk bounds decompression so memory stays bounded by the input.
const fuzzMaxChunk = 1 << 20

// FuzzMCAPRead feeds arbitrary bytes to the MCAP reader as a hostile .mcap
// file: Info, Scan, Verify, Attachments, Messages, MessagesInTimeOrder and Doctor must never
// panic (Doctor listing at most 100 problems), must return nil results with
// an error, must never hand out more payload bytes
// than a chunk may decompress to, and the time-ordered walk must be ordered
// and carry the same bytes as the file-order walk. The same bytes read as
// a dump by the offline tools (dumpfile.OpenBytes: mcap.PackReader through
// a dumpfile.Messages stream, and in file order) must not panic either: the
// stream in capture-time order, as many messages both ways, none without a
// topic.
func FuzzMCAPRead(f *testing.F) {
	f.Add(mcapSeed(mcap.CompressionNone))
	f.Add(mcapSeed(mcap.CompressionLZ4))
	f.Add(mcapSeed(mcap.CompressionZstd))
	f.Add(packWriterSeed(mcap.CompressionNone))
	f.Add(packWriterSeed(mcap.CompressionLZ4))
	f.Add(typedSeed())
	// Other writers' files: attachments, metadata names shared, no
	// summary, records longer than their fields.
	for _, name := range []string{"chunked-extra", "unchunked-no-summary", "padded-chunked", "padded-no-summary"} {
		if b, err := os.ReadFile(filepath.Join("..", "mcap", "testdata", "other", name+".mcap")); err == nil {
			f.Add(b)
		}
	}
	addHostile(f, ".mcap")
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := mcap.NewReader(data, "fuzz.mcap", mcap.ReaderOptions{MaxChunkSize: fuzzMaxChunk})
		if err != nil {
			if r != nil {
				t.Fatal("error with a partial result")
			}
			return
		}
		defer r.Close()
		for _, get := range []func() (*mcap.Info, error){r.Info, r.Scan} {
			info, err := get()
			if (err != nil) == (info != nil) {
				t.Fatalf("info %v with error %v", info != nil, err)
			}
		}
		// Verify is Scan and more: what Scan refuses it refuses, what it
		// passes Scan passes, with the same figures.
		vinfo, verr := r.Verify()
		sinfo, serr := r.Scan()
		switch {
		case serr != nil && verr == nil:
			t.Fatalf("Scan fails (%v), Verify passes", serr)
		case verr == nil && (vinfo == nil || vinfo.Messages != sinfo.Messages):
			t.Fatalf("Verify passes with %+v, Scan says %+v", vinfo, sinfo)
		}
		// Attachments: each inside the file; a file Verify passes gives
		// every one Scan counted, without an error.
		as, aerr := r.Attachments()
		for _, a := range as {
			if a.Offset < 8 || a.Offset+int64(len(a.Data)) > int64(len(data)) {
				t.Fatalf("attachment %q of %d bytes at %d of a %d-byte file", a.Name, len(a.Data), a.Offset, len(data))
			}
		}
		if verr == nil && (aerr != nil || len(as) != sinfo.Attachments) {
			t.Fatalf("Verify passes, Attachments gives %d (%v), Scan counts %d", len(as), aerr, sinfo.Attachments)
		}
		var total int
		// An error is fine here (the input is hostile); what is checked is
		// what it handed out before.
		_ = r.Messages(func(c *mcap.Channel, m *mcap.Message) error {
			if c == nil || c.ID != m.ChannelID {
				t.Fatalf("message on channel %d handed channel %+v", m.ChannelID, c)
			}
			total += len(m.Data)
			return nil
		})
		if total > len(data)*1024+fuzzMaxChunk {
			t.Fatalf("%d payload bytes from %d input bytes", total, len(data))
		}
		var last uint64
		ordered := 0
		err = r.MessagesInTimeOrder(func(_ *mcap.Channel, m *mcap.Message) error {
			if m.LogTime < last {
				t.Fatalf("time order: %d after %d", m.LogTime, last)
			}
			last = m.LogTime
			ordered += len(m.Data)
			return nil
		})
		if err == nil && ordered != total {
			t.Fatalf("time order handed %d payload bytes, file order %d", ordered, total)
		}
		fuzzDumpStream(t, data)
		if ps := mcap.Doctor("fuzz.mcap", data, mcap.ReaderOptions{MaxChunkSize: fuzzMaxChunk}); len(ps) > 100 {
			t.Fatalf("Doctor listed %d problems, more than its bound", len(ps))
		}
	})
}

// fuzzDumpStream reads data as the offline tools read a dump.
func fuzzDumpStream(t *testing.T, data []byte) {
	src, err := dumpfile.OpenBytes("fuzz.mcap", data, mcap.ReaderOptions{MaxChunkSize: fuzzMaxChunk})
	if err != nil {
		if src != nil {
			t.Fatal("error with a partial result")
		}
		return
	}
	defer src.Close()
	topics := map[string]bool{}
	for _, tp := range src.Topics() {
		topics[tp.String()] = true
	}
	_ = src.EndNs()
	msgs := dumpfile.NewMessages(src)
	var n uint64
	last := int64(-1 << 63)
	for {
		ok, err := msgs.Next()
		if err != nil || !ok {
			break
		}
		m := msgs.Message()
		if m.TimeNs < last {
			t.Fatalf("stream time order: %d after %d", m.TimeNs, last)
		}
		if !topics[mcap.TopicName(m.Name, m.Channel)] {
			t.Fatalf("message on topic %q#%q not in Topics", m.Name, m.Channel)
		}
		if m.Type == nil || m.Type.Validate() != nil {
			t.Fatalf("message with type %v", m.Type)
		}
		last = m.TimeNs
		n++
	}
	var inFile uint64
	errFile := src.InFileOrder(func(*dumpfile.Message) error { inFile++; return nil })
	if errFile == nil && inFile != n {
		t.Fatalf("%d messages in file order, %d in time order", inFile, n)
	}
}

// FuzzMCAPRoundTrip writes messages derived from the input with each
// compression and chunk size, then reads them back: every message must come
// back identical, in order, on its topic.
func FuzzMCAPRoundTrip(f *testing.F) {
	f.Add([]byte("\x00\x10hello world, this is topic zero"), uint16(64), uint8(0))
	f.Add(bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 100), uint16(1), uint8(1))
	f.Add([]byte{}, uint16(0), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, chunk uint16, comp uint8) {
		compression := []string{mcap.CompressionNone, mcap.CompressionLZ4, mcap.CompressionZstd}[comp%3]
		var buf bytes.Buffer
		w, err := mcap.NewWriter(&buf, mcap.Options{Compression: compression, ChunkSize: int(chunk)})
		if err != nil {
			t.Fatal(err)
		}
		topics := []string{"a", "b", "c"}
		for _, name := range topics {
			if _, err := w.AddTopic(mcap.Topic{Name: name}); err != nil {
				t.Fatal(err)
			}
		}
		// Split the input into messages: one length byte, then the payload.
		var want []mcap.Message
		for i := 0; len(in) > 0; i++ {
			n := min(int(in[0]), len(in)-1)
			m := mcap.Message{ChannelID: uint16(i % len(topics)), Sequence: uint32(i),
				LogTime: uint64(i) * 7, PublishTime: uint64(i) * 7, Data: in[1 : 1+n]}
			want = append(want, m)
			if err := w.WriteMessage(&m); err != nil {
				t.Fatal(err)
			}
			in = in[1+n:]
		}
		if err := w.AddMetadata("edr.trigger", map[string]string{"n": string(rune(len(want)))}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := mcap.NewReader(buf.Bytes(), "rt.mcap", mcap.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		err = r.Messages(func(c *mcap.Channel, m *mcap.Message) error {
			if i >= len(want) {
				t.Fatalf("extra message %+v", m)
			}
			wm := want[i]
			if m.ChannelID != wm.ChannelID || c.Topic != topics[wm.ChannelID] || m.Sequence != wm.Sequence ||
				m.LogTime != wm.LogTime || !bytes.Equal(m.Data, wm.Data) {
				t.Fatalf("message %d: got %+v, want %+v", i, m, wm)
			}
			i++
			return nil
		})
		if err != nil || i != len(want) {
			t.Fatalf("read %d of %d: %v", i, len(want), err)
		}
		info, err := r.Info()
		if err != nil || info.Messages != uint64(len(want)) || len(info.Metadata) != 1 {
			t.Fatalf("info %+v, %v", info, err)
		}
	})
}

// mcapSeed is a small valid file with every record type the writer emits.
func mcapSeed(compression string) []byte {
	var buf bytes.Buffer
	w, err := mcap.NewWriter(&buf, mcap.Options{Compression: compression, ChunkSize: 64})
	if err != nil {
		panic(err)
	}
	a, _ := w.AddTopic(mcap.Topic{Name: "speed", Type: ingest.Raw("edr.Speed")})
	b, _ := w.AddTopic(mcap.Topic{Name: "imu", Channel: "1", Type: ingest.Type{MessageEncoding: "protobuf", Schema: ingest.Schema{Name: "Imu", Encoding: "protobuf", Data: []byte{1, 2}}}})
	for i := range 8 {
		data := binary.LittleEndian.AppendUint32(nil, uint32(i*1000))
		_ = w.WriteMessage(&mcap.Message{ChannelID: []uint16{a, b}[i%2], LogTime: uint64(i), PublishTime: uint64(i), Data: data})
	}
	_ = w.AddMetadata("edr.trigger", map[string]string{"reason": "seed"})
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// packWriterSeed is a small MCAP dump as the recorder writes it: pack
// messages out of time order across small chunks, one topic with a meta
// channel, and the dump information.
// typedSeed is a typed file: a packed struct transcoded to json (its
// layout in the channel metadata) that changes layout, a short message on
// the untranscoded channel, and a protobuf-typed topic.
func typedSeed() []byte {
	var buf bytes.Buffer
	pw, err := mcap.NewPackWriter(&buf, mcap.Options{ChunkSize: 128})
	if err != nil {
		panic(err)
	}
	pw.DeclareTopic(mcap.Topic{Name: "speed", Type: ingest.Packed("v.S", "f32le speed (m/s); u8 gear; str8 note")})
	pw.DeclareTopic(mcap.Topic{Name: "pb", Type: ingest.Type{MessageEncoding: "protobuf",
		Schema: ingest.Schema{Name: "p.M", Encoding: "protobuf", Data: []byte{0x0a, 0x03, 'a', '.', 'p'}}}})
	_ = pw.Add("speed", "", nil, 1, 1, []byte{0, 0, 0x80, 0x3f, 2, 1, 'x'})
	_ = pw.Add("speed", "", nil, 2, 2, []byte{1})
	_ = pw.Add("pb", "", nil, 3, 3, []byte{8, 1})
	_ = pw.DeclareTopic(mcap.Topic{Name: "speed", Type: ingest.Packed("v.S", "u16le speed")})
	_ = pw.Add("speed", "", nil, 4, 4, []byte{9, 0})
	if err := pw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func packWriterSeed(compression string) []byte {
	var buf bytes.Buffer
	pw, err := mcap.NewPackWriter(&buf, mcap.Options{Compression: compression, ChunkSize: 96})
	if err != nil {
		panic(err)
	}
	pw.DeclareTopic(mcap.Topic{Name: "speed", Type: ingest.Raw("f32")})
	for i, done := range []int64{30, 10, 20, 10, 50, 40} {
		var meta []byte
		if i%2 == 0 {
			meta = []byte{8, byte(i)}
		}
		_ = pw.Add([]string{"speed", "cam"}[i%2], []string{"", "front"}[i%2], meta, done-1, done, []byte{byte(i), 1, 2})
	}
	_ = pw.SetDumpInfo(dumpinfo.Info{Triggers: []dumpinfo.Trigger{{ID: 1, Reason: "seed", TimeNs: 20}},
		Topics: []dumpinfo.TopicAccount{{Topic: "speed#", Type: "f32", Messages: 3, Overwritten: 1}}})
	if err := pw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// FuzzMCAPRecover feeds arbitrary bytes to mcap.Recover as a damaged .mcap
// file: it must never panic; an error comes without a report; otherwise the
// output is a valid MCAP file that the reader scans with every CRC checked,
// whose summary agrees with its data, that mcap.Doctor finds conformant, holding exactly the messages the
// report counts, no more payload than the input could decompress to; and
// recovering the output again loses nothing.
func FuzzMCAPRecover(f *testing.F) {
	for _, seed := range [][]byte{mcapSeed(mcap.CompressionNone), mcapSeed(mcap.CompressionLZ4), mcapSeed(mcap.CompressionZstd),
		packWriterSeed(mcap.CompressionZstd)} {
		f.Add(seed)
		f.Add(seed[:len(seed)*2/3]) // cut by a power loss
		flipped := bytes.Clone(seed)
		flipped[len(seed)/3] ^= 0x5a // a damaged chunk
		f.Add(flipped)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		rep, err := mcap.Recover("fuzz.mcap", data, &out, mcap.RecoverOptions{ReaderOptions: mcap.ReaderOptions{MaxChunkSize: fuzzMaxChunk}})
		if err != nil {
			if rep != nil {
				t.Fatal("error with a report")
			}
			return
		}
		r, err := mcap.NewReader(out.Bytes(), "recovered.mcap", mcap.ReaderOptions{MaxChunkSize: fuzzMaxChunk})
		if err != nil {
			t.Fatalf("recovered file does not open: %v", err)
		}
		defer r.Close()
		scan, err := r.Scan()
		if err != nil {
			t.Fatalf("recovered file does not scan: %v", err)
		}
		sum, err := r.Info()
		if err != nil || sum.Scanned || sum.Messages != scan.Messages || sum.Chunks != scan.Chunks {
			t.Fatalf("recovered file's summary: %v, %+v vs scan %d messages in %d chunks", err, sum, scan.Messages, scan.Chunks)
		}
		if scan.Messages != rep.Messages {
			t.Fatalf("report says %d messages, the file holds %d", rep.Messages, scan.Messages)
		}
		var payload uint64
		for _, c := range scan.Channels {
			payload += c.Bytes
		}
		if payload > uint64(len(data))*1024+fuzzMaxChunk {
			t.Fatalf("%d payload bytes from %d input bytes", payload, len(data))
		}
		if ps := mcap.Doctor("recovered.mcap", out.Bytes(), mcap.ReaderOptions{MaxChunkSize: fuzzMaxChunk}); len(ps) != 0 {
			t.Fatalf("the recovered file is not conformant: %v", ps[0])
		}
		var again bytes.Buffer
		rep2, err := mcap.Recover("again.mcap", out.Bytes(), &again, mcap.RecoverOptions{})
		if err != nil || len(rep2.Lost) != 0 || rep2.Truncated || rep2.Messages != rep.Messages {
			t.Fatalf("recovering the recovered file: %v, %+v", err, rep2)
		}
	})
}
