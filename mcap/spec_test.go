package mcap

import (
	"fmt"
	"testing"
)

// TestSpecLayout checks the index records of our files against the records
// they point at, byte for byte, as the specification defines them: every
// SummaryOffset group, every ChunkIndex (chunk offset and length, message
// index offsets and total length, sizes, times), every MessageIndex entry
// (log_time and offset of a Message in the uncompressed chunk) and every
// MetadataIndex. No third-party reader checks the SummaryOffset section.
func TestSpecLayout(t *testing.T) {
	msgs := testMessages(300)
	for _, comp := range compressions {
		t.Run(fmt.Sprintf("compression=%q", comp), func(t *testing.T) {
			b := encode(t, Options{Compression: comp, ChunkSize: 8 << 10}, msgs)
			r, err := NewReader(b, "spec.mcap", ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			at := func(off uint64) record { // the record at off
				it := recIter{b: b[off:], base: int64(off)}
				rec, ok, _ := it.next()
				if !ok {
					t.Fatalf("no record at %d", off)
				}
				return rec
			}
			ss, so := r.footer.summaryStart, r.footer.summaryOffsetStart
			if ss == 0 || so <= ss || so >= uint64(r.footerAt) {
				t.Fatalf("footer summary_start %d summary_offset_start %d footer at %d", ss, so, r.footerAt)
			}
			if de := at(ss - recordPrefixLen - dataEndLen); de.op != OpDataEnd {
				t.Fatalf("record before the summary is 0x%02x, want DataEnd", de.op)
			}
			// SummaryOffset groups tile the summary section exactly, in order.
			groups := map[Opcode]bool{}
			next := ss
			it := recIter{b: b[so:r.footerAt], base: int64(so)}
			for {
				rec, ok, _ := it.next()
				if !ok {
					break
				}
				d := dec{b: rec.body}
				op, start, length := Opcode(d.u8()), d.u64(), d.u64()
				if rec.op != OpSummaryOffset || d.bad || start != next {
					t.Fatalf("summary offset %+v: op 0x%02x start %d, want start %d", rec, op, start, next)
				}
				g := recIter{b: b[start : start+length], base: int64(start)}
				n := 0
				for {
					gr, ok, trunc := g.next()
					if trunc || (ok && gr.op != op) {
						t.Fatalf("group 0x%02x: record 0x%02x at %d (trunc %v)", op, gr.op, gr.at, trunc)
					}
					if !ok {
						break
					}
					n++
				}
				groups[op] = n > 0
				next = start + length
			}
			if next != so {
				t.Fatalf("groups end at %d, summary offsets start at %d", next, so)
			}
			for _, op := range []Opcode{OpSchema, OpChannel, OpStatistics, OpChunkIndex, OpMetadataIndex} {
				if !groups[op] {
					t.Errorf("no summary group for opcode 0x%02x", op)
				}
			}
			// Every ChunkIndex and MessageIndex against its chunk.
			var dc decompressor
			dc.max = 1 << 30
			indexed := 0
			sum := recIter{b: b[ss:so], base: int64(ss)}
			for {
				rec, ok, _ := sum.next()
				if !ok {
					break
				}
				d := dec{b: rec.body}
				switch rec.op {
				case OpMetadataIndex:
					off, length, name := d.u64(), d.u64(), d.str()
					m := at(off)
					md := dec{b: m.body}
					if m.op != OpMetadata || uint64(recordPrefixLen+len(m.body)) != length || md.str() != name {
						t.Errorf("metadata index %q -> %+v", name, m)
					}
				case OpChunkIndex:
					start, end, off, length := d.u64(), d.u64(), d.u64(), d.u64()
					mi := map[uint16]uint64{}
					d.u16u64Map(func(k uint16, v uint64) { mi[k] = v })
					miLen, compName, csize, usize := d.u64(), d.str(), d.u64(), d.u64()
					ch := at(off)
					if ch.op != OpChunk || uint64(recordPrefixLen+len(ch.body)) != length {
						t.Fatalf("chunk index -> 0x%02x of %d bytes, want Chunk of %d", ch.op, recordPrefixLen+len(ch.body), length)
					}
					cd := dec{b: ch.body}
					cStart, cEnd, cU, _, cComp, payload := cd.u64(), cd.u64(), cd.u64(), cd.u32(), cd.str(), cd.bytes64()
					if cStart != start || cEnd != end || cU != usize || cComp != compName || uint64(len(payload)) != csize || compName != comp {
						t.Fatalf("chunk index fields disagree with the chunk")
					}
					records := payload
					if comp != "" {
						if records, err = dc.decompress(nil, comp, payload, usize); err != nil {
							t.Fatal(err)
						}
					}
					// Message indexes follow the chunk back to back.
					pos := off + length
					for _, id := range sortedKeys(mi) {
						if mi[id] != pos {
							t.Fatalf("message index of channel %d at %d, want %d", id, mi[id], pos)
						}
						m := at(pos)
						md := dec{b: m.body}
						if m.op != OpMessageIndex || md.u16() != id {
							t.Fatalf("not the message index of channel %d", id)
						}
						entries := md.bytes32()
						for i := 0; i+16 <= len(entries); i += 16 {
							lt, mo := le.Uint64(entries[i:]), le.Uint64(entries[i+8:])
							mr := recIter{b: records[mo:]}
							msg, ok, _ := mr.next()
							if !ok || msg.op != OpMessage || le.Uint16(msg.body) != id || le.Uint64(msg.body[6:]) != lt {
								t.Fatalf("message index entry (%d, %d) does not point at its message", lt, mo)
							}
							if lt < start || lt > end {
								t.Fatalf("log_time %d outside the chunk's [%d, %d]", lt, start, end)
							}
							indexed++
						}
						pos += uint64(recordPrefixLen + len(m.body))
					}
					if pos-(off+length) != miLen {
						t.Fatalf("message_index_length %d, records take %d", miLen, pos-(off+length))
					}
				}
			}
			if indexed != len(msgs) {
				t.Errorf("%d messages indexed, want %d", indexed, len(msgs))
			}
		})
	}
}
