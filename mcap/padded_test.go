package mcap

import (
	"bytes"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

// Files whose records are longer than their fields: the MCAP specification
// lets a later version add fields at the end of any record, and a reader
// of today "should ignore any unknown fields". testdata/other/padded-*.mcap
// are built here by hand, every record but Message (whose data is the rest
// of the record), Footer and DataEnd carrying paddedPad after its last
// field; the reference reader reads them (TestNodeReadsPadded). Its indexed
// reader finds the Footer at a fixed distance from the end of the file and
// DataEnd at a fixed distance before the summary, so a longer one of those
// is not a file any reader reads; edr-lite's readers accept a longer
// DataEnd too (the variant padEnd, not written to testdata).
// Rewrite them with
//
//	go test ./mcap/ -run PaddedUpToDate -update

// paddedPad is what every padded record carries after its fields.
var paddedPad = []byte("\x00future\xff")

// paddedMsg is one message of the padded files.
type paddedMsg struct {
	ch       uint16
	seq      uint32
	log, pub uint64
	data     []byte
	inChunk  int // the chunk that holds it (chunked files)
	chunkOff uint64
}

// paddedMessages are the padded files' messages: /a (json, schema S), /b
// (schemaless raw bytes), /c (a channel a chunk defines), sequences from
// 10 with a gap, in log_time order.
func paddedMessages() []paddedMsg {
	return []paddedMsg{
		{ch: 0, seq: 10, log: 1000, pub: 900, data: []byte(`{"v":1}`)},
		{ch: 1, seq: 11, log: 1001, pub: 901, data: []byte{1, 2, 3}},
		{ch: 0, seq: 13, log: 1002, pub: 902, data: []byte(`{"v":2}`), inChunk: 1},
		{ch: 2, seq: 7, log: 1003, pub: 903, data: []byte("c0"), inChunk: 1},
		{ch: 1, seq: 14, log: 1004, pub: 904, data: []byte{}, inChunk: 1},
	}
}

// paddedVariant says how a padded file is laid out.
type paddedVariant struct {
	name    string
	chunked bool // messages in two chunks (the second lz4), with message indexes
	summary bool // a summary (schemas, channels, statistics, indexes, offsets)
	padEnd  bool // DataEnd padded too
}

var paddedVariants = []paddedVariant{
	{"padded-chunked", true, true, false},
	{"padded-unchunked", false, true, false},
	{"padded-no-summary", true, false, false},
}

// buildPadded writes a padded file by hand, every offset, length and CRC
// computed for the padded records.
func buildPadded(t testing.TB, v paddedVariant) []byte {
	t.Helper()
	var b []byte
	rec := func(dst []byte, op Opcode, fields ...[]byte) []byte {
		var body []byte
		for _, f := range fields {
			body = append(body, f...)
		}
		body = append(body, paddedPad...)
		dst = append(dst, byte(op))
		dst = appendU64(dst, uint64(len(body)))
		return append(dst, body...)
	}
	u16 := func(v uint16) []byte { return appendU16(nil, v) }
	u32 := func(v uint32) []byte { return appendU32(nil, v) }
	u64 := func(v uint64) []byte { return appendU64(nil, v) }
	str := func(s string) []byte { return appendString(nil, s) }
	schema := func(dst []byte) []byte {
		return rec(dst, OpSchema, u16(1), str("S"), str("jsonschema"), appendBytes32(nil, []byte(`{"type":"object"}`)))
	}
	channel := func(dst []byte, id, schemaID uint16, topic, enc string, md map[string]string) []byte {
		return rec(dst, OpChannel, u16(id), u16(schemaID), str(topic), str(enc), appendStringMap(nil, md))
	}
	chanA := func(dst []byte) []byte { return channel(dst, 0, 1, "/a", "json", nil) }
	chanB := func(dst []byte) []byte { return channel(dst, 1, 0, "/b", "x-raw", map[string]string{"k": "v"}) }
	chanC := func(dst []byte) []byte { return channel(dst, 2, 0, "/c", "x-raw", nil) }
	message := func(dst []byte, m *paddedMsg) []byte {
		dst = append(dst, byte(OpMessage))
		dst = appendU64(dst, uint64(messageFixedLen+len(m.data)))
		dst = appendU16(dst, m.ch)
		dst = appendU32(dst, m.seq)
		dst = appendU64(dst, m.log)
		dst = appendU64(dst, m.pub)
		return append(dst, m.data...)
	}

	b = append(b, Magic[:]...)
	b = rec(b, OpHeader, str(""), str("hand-padded"))
	b = schema(b)
	b = chanA(b)
	b = chanB(b)

	msgs := paddedMessages()
	type chunkAt struct {
		at, length   uint64
		start, end   uint64
		comp         string
		csize, usize uint64
		miOffs       map[uint16]uint64
		miFrom, miTo uint64
	}
	var chunks []chunkAt
	counts := map[uint16]uint64{}
	if v.chunked {
		for ci, comp := range []string{CompressionNone, CompressionLZ4} {
			var records []byte
			if ci == 1 {
				records = schema(records) // repeated inside the chunk, padded
				records = chanC(records)
			}
			byCh := map[uint16][]indexEntry{}
			var start, end uint64
			first := true
			for i := range msgs {
				m := &msgs[i]
				if m.inChunk != ci {
					continue
				}
				m.chunkOff = uint64(len(records))
				records = message(records, m)
				byCh[m.ch] = append(byCh[m.ch], indexEntry{m.log, m.chunkOff})
				if first || m.log < start {
					start = m.log
				}
				if first || m.log > end {
					end = m.log
				}
				first = false
				counts[m.ch]++
			}
			payload := records
			if comp != CompressionNone {
				c, err := newCompressor(comp, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				if payload, err = c.compress(nil, records); err != nil {
					t.Fatal(err)
				}
			}
			c := chunkAt{at: uint64(len(b)), start: start, end: end, comp: comp, csize: uint64(len(payload)),
				usize: uint64(len(records)), miOffs: map[uint16]uint64{}}
			b = rec(b, OpChunk, u64(start), u64(end), u64(uint64(len(records))), u32(crc32.ChecksumIEEE(records)),
				str(comp), appendU64(nil, uint64(len(payload))), payload)
			c.length = uint64(len(b)) - c.at
			c.miFrom = uint64(len(b))
			for _, ch := range []uint16{0, 1, 2} {
				e := byCh[ch]
				if len(e) == 0 {
					continue
				}
				c.miOffs[ch] = uint64(len(b))
				var entries []byte
				for _, x := range e {
					entries = appendU64(appendU64(entries, x.logTime), x.offset)
				}
				b = rec(b, OpMessageIndex, u16(ch), appendBytes32(nil, entries))
			}
			c.miTo = uint64(len(b))
			chunks = append(chunks, c)
		}
	} else {
		b = chanC(b)
		for i := range msgs {
			b = message(b, &msgs[i])
			counts[msgs[i].ch]++
		}
	}

	attData := []byte("wheel_base: 2.7\n")
	attAt := uint64(len(b))
	var attFields []byte
	attFields = appendU64(attFields, 5) // log_time
	attFields = appendU64(attFields, 6) // create_time
	attFields = appendString(attFields, "calib.yaml")
	attFields = appendString(attFields, "application/yaml")
	attFields = appendU64(attFields, uint64(len(attData)))
	attFields = append(attFields, attData...)
	b = rec(b, OpAttachment, attFields, u32(crc32.ChecksumIEEE(attFields)))
	attLen := uint64(len(b)) - attAt

	mdAt := uint64(len(b))
	b = rec(b, OpMetadata, str("robot"), appendStringMap(nil, map[string]string{"name": "r2", "site": "lab"}))
	mdLen := uint64(len(b)) - mdAt

	if v.padEnd {
		b = rec(b, OpDataEnd, u32(crc32.ChecksumIEEE(b)))
	} else {
		b = appendDataEnd(b, crc32.ChecksumIEEE(b))
	}

	summaryStart, offsetsStart := uint64(0), uint64(0)
	if v.summary {
		summaryStart = uint64(len(b))
		type group struct {
			op            Opcode
			start, length uint64
		}
		var groups []group
		mark := func(op Opcode, from uint64) {
			groups = append(groups, group{op, from, uint64(len(b)) - from})
		}
		from := uint64(len(b))
		b = schema(b)
		mark(OpSchema, from)
		from = uint64(len(b))
		b = chanC(chanB(chanA(b)))
		mark(OpChannel, from)
		from = uint64(len(b))
		var countMap []byte
		for _, ch := range []uint16{0, 1, 2} {
			countMap = appendU64(appendU16(countMap, ch), counts[ch])
		}
		b = rec(b, OpStatistics, u64(uint64(len(msgs))), u16(1), u32(3), u32(1), u32(1), u32(uint32(len(chunks))),
			u64(msgs[0].log), u64(msgs[len(msgs)-1].log), appendBytes32(nil, countMap))
		mark(OpStatistics, from)
		if len(chunks) > 0 {
			from = uint64(len(b))
			for _, c := range chunks {
				var keys []uint16
				var vals []uint64
				for _, ch := range []uint16{0, 1, 2} {
					if off, ok := c.miOffs[ch]; ok {
						keys, vals = append(keys, ch), append(vals, off)
					}
				}
				b = rec(b, OpChunkIndex, u64(c.start), u64(c.end), u64(c.at), u64(c.length),
					appendU16U64Map(nil, keys, vals), u64(c.miTo-c.miFrom), str(c.comp), u64(c.csize), u64(c.usize))
			}
			mark(OpChunkIndex, from)
		}
		from = uint64(len(b))
		b = rec(b, OpAttachmentIndex, u64(attAt), u64(attLen), u64(5), u64(6), u64(uint64(len(attData))),
			str("calib.yaml"), str("application/yaml"))
		mark(OpAttachmentIndex, from)
		from = uint64(len(b))
		b = rec(b, OpMetadataIndex, u64(mdAt), u64(mdLen), str("robot"))
		mark(OpMetadataIndex, from)
		offsetsStart = uint64(len(b))
		for _, g := range groups {
			b = rec(b, OpSummaryOffset, []byte{byte(g.op)}, u64(g.start), u64(g.length))
		}
	}
	b = appendFooterPrefix(b, summaryStart, offsetsStart)
	crc := uint32(0)
	if v.summary {
		crc = crc32.ChecksumIEEE(b[summaryStart:])
	}
	b = appendU32(b, crc)
	return append(b, Magic[:]...)
}

// TestPaddedUpToDate checks testdata/other/padded-*.mcap are what
// buildPadded writes (rewritten with -update).
func TestPaddedUpToDate(t *testing.T) {
	for _, v := range paddedVariants {
		got := buildPadded(t, v)
		p := filepath.Join("testdata", "other", v.name+".mcap")
		if *update {
			if err := os.WriteFile(p, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from what buildPadded writes (go test ./mcap/ -run PaddedUpToDate -update): %v", p, err)
		}
	}
}

// TestReadPadded reads the padded files with every reader of the package:
// Verify, Doctor, Info (from the summary and by scanning), Messages,
// MessagesInTimeOrder, PackReader and Recover, each finding every message
// (with its sequence), the attachment and the metadata.
func TestReadPadded(t *testing.T) {
	want := paddedMessages()
	for _, v := range append(paddedVariants, paddedVariant{"padded-dataend", true, true, true}) {
		t.Run(v.name, func(t *testing.T) {
			b := buildPadded(t, v)
			r, err := NewReader(b, v.name, ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Library != "hand-padded" {
				t.Errorf("library %q", r.Library)
			}
			if _, err := r.Verify(); err != nil {
				t.Errorf("Verify: %v", err)
			}
			for _, p := range Doctor(v.name, b, ReaderOptions{}) {
				t.Errorf("Doctor: %v", p)
			}
			infos := map[string]func() (*Info, error){"Info": r.Info, "Scan": r.Scan}
			for name, f := range infos {
				info, err := f()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if info.Messages != uint64(len(want)) || info.Attachments != 1 || len(info.Channels) != 3 ||
					len(info.Metadata) != 1 || info.Metadata[0].KV["site"] != "lab" || info.StartTime != 1000 || info.EndTime != 1004 {
					t.Errorf("%s: %+v", name, info)
				}
			}
			check := func(what string, walk func(fn func(c *Channel, m *Message) error) error) {
				t.Helper()
				var got []paddedMsg
				err := walk(func(c *Channel, m *Message) error {
					got = append(got, paddedMsg{ch: c.ID, seq: m.Sequence, log: m.LogTime, pub: m.PublishTime, data: bytes.Clone(m.Data)})
					return nil
				})
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %d messages, want %d", what, len(got), len(want))
				}
				for i := range want {
					w := want[i]
					w.inChunk, w.chunkOff = 0, 0
					if g := got[i]; g.ch != w.ch || g.seq != w.seq || g.log != w.log || g.pub != w.pub || !bytes.Equal(g.data, w.data) {
						t.Errorf("%s: message %d = %+v, want %+v", what, i, g, w)
					}
				}
			}
			check("Messages", r.Messages)
			check("MessagesInTimeOrder", r.MessagesInTimeOrder)
			p, err := NewPackReader(r)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for {
				ok, err := p.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				n++
			}
			if n != len(want) {
				t.Errorf("PackReader: %d messages", n)
			}
			var out bytes.Buffer
			rep, err := Recover(v.name, b, &out, RecoverOptions{})
			if err != nil || rep.Messages != uint64(len(want)) || len(rep.Lost) != 0 {
				t.Errorf("Recover: %+v, %v", rep, err)
			}
			if !v.chunked {
				return
			}
			// The first chunk's opcode damaged: Recover finds the second
			// (padded) chunk again by its CRC.
			damaged := bytes.Clone(b)
			it := recIter{b: damaged[magicLen:], base: magicLen}
			for {
				rec, ok, _ := it.next()
				if !ok {
					t.Fatal("no chunk")
				}
				if rec.op == OpChunk {
					damaged[rec.at] = 0x55
					break
				}
			}
			out.Reset()
			rep, err = Recover(v.name, damaged, &out, RecoverOptions{})
			if err != nil || rep.Messages != 3 {
				t.Errorf("Recover of a damaged file: %+v, %v", rep, err)
			}
		})
	}
}

// TestNodeReadsPadded: the reference TypeScript reader reads the padded
// files (indexed when they have a summary, streamed always) and finds what
// edr-lite's reader finds: every message with its sequence, the
// attachment and the metadata.
func TestNodeReadsPadded(t *testing.T) {
	dir := nodeValidator(t)
	var files []string
	for _, v := range paddedVariants {
		p, err := filepath.Abs(filepath.Join("testdata", "other", v.name+".mcap"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	res := runNode(t, dir, files...)
	want := map[string]string{"/a": "10,13", "/b": "11,14", "/c": "7"}
	for i, v := range paddedVariants {
		r := res[files[i]]
		if r.Error != "" {
			t.Errorf("%s: @mcap/core: %s", v.name, r.Error)
			continue
		}
		if r.NotIndexed == v.summary {
			t.Errorf("%s: indexed %v, has a summary %v", v.name, !r.NotIndexed, v.summary)
		}
		for topic, seqs := range want {
			if got := r.Stream.Topics[topic]; got.Seqs != seqs {
				t.Errorf("%s: %s: sequences %q, want %q", v.name, topic, got.Seqs, seqs)
			}
		}
		if len(r.Stream.Attachments) != 1 || r.Stream.Attachments[0].Name != "calib.yaml" || r.Stream.Attachments[0].Size != 16 ||
			len(r.Stream.Metadata) != 1 || r.Stream.Metadata[0].KV["site"] != "lab" {
			t.Errorf("%s: stream attachments %+v, metadata %+v", v.name, r.Stream.Attachments, r.Stream.Metadata)
		}
		// The indexed reader reads messages from chunks only.
		if v.summary && (len(r.Indexed.Attachments) != 1 || r.Indexed.Statistics.MessageCount != 5 || v.chunked && len(r.Indexed.Topics) != 3) {
			t.Errorf("%s: indexed %+v", v.name, r.Indexed)
		}
	}
}
