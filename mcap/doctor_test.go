package mcap

import (
	"bytes"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func problemsText(ps []*CorruptError) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Error() + "\n")
	}
	return b.String()
}

// TestDoctorCleanFiles: our files of every compression and layout, a
// recovered one, and the reference TypeScript writer's, are conformant.
func TestDoctorCleanFiles(t *testing.T) {
	msgs := testMessages(400)
	files := map[string][]byte{}
	for _, comp := range []string{CompressionNone, CompressionLZ4, CompressionZstd} {
		files["ours-"+comp] = recoverFile(t, comp, 16<<10, msgs)
	}
	var out bytes.Buffer
	if _, err := Recover("cut", files["ours-zstd"][:len(files["ours-zstd"])/2], &out, RecoverOptions{}); err != nil {
		t.Fatal(err)
	}
	files["recovered"] = out.Bytes()
	others, _ := filepath.Glob(filepath.Join("testdata", "other", "*.mcap"))
	for _, p := range append(others, filepath.Join("testdata", "pinned.mcap")) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = b
	}
	for name, b := range files {
		ps := Doctor(name, b, ReaderOptions{})
		if filepath.Base(name) == "unchunked.mcap" {
			// The reference writer indexes an attachment of an unchunked
			// file at the offset the records before it were still
			// buffered at (its own indexed reader refuses to read it:
			// "Attachment data at offset 69 does not point to attachment
			// record (found Schema)").
			if len(ps) != 2 || ps[0].Field != "AttachmentIndex" || ps[1].Field != "AttachmentIndex" {
				t.Errorf("%s: want the reference writer's AttachmentIndex at the wrong offset, got:\n%s", name, problemsText(ps))
			}
			continue
		}
		if len(ps) != 0 {
			t.Errorf("%s:\n%s", name, problemsText(ps))
		}
	}
}

// TestDoctorFindsProblems: files a reader still reads but that break the
// specification are each reported with the record at fault.
func TestDoctorFindsProblems(t *testing.T) {
	msgs := testMessages(100)
	good := recoverFile(t, CompressionNone, 4<<10, msgs)
	r, _ := NewReader(good, "", ReaderOptions{})
	// find the Statistics record and the first ChunkIndex in the summary
	var statsAt, chunkIdxAt int64
	it := recIter{b: good[r.footer.summaryStart:r.footerAt], base: int64(r.footer.summaryStart)}
	for {
		rec, ok, _ := it.next()
		if !ok {
			break
		}
		switch rec.op {
		case OpStatistics:
			statsAt = rec.at
		case OpChunkIndex:
			if chunkIdxAt == 0 {
				chunkIdxAt = rec.at
			}
		}
	}
	// resum rewrites the summary CRC so that only the doctor sees the change
	resum := func(b []byte) []byte {
		r, _ := NewReader(b, "", ReaderOptions{})
		crc := crc32.ChecksumIEEE(b[r.footer.summaryStart : r.footerAt+recordPrefixLen+8+8])
		le.PutUint32(b[r.footerAt+recordPrefixLen+16:], crc)
		return b
	}
	for _, tc := range []struct {
		name, want string
		edit       func(b []byte) []byte
	}{
		{"statistics message count", "Statistics.message_count: mcap: not conformant: 101, the data section holds 100",
			func(b []byte) []byte { le.PutUint64(b[statsAt+recordPrefixLen:], 101); return resum(b) }},
		{"chunk index time", "ChunkIndex: mcap: not conformant: does not describe the chunk",
			func(b []byte) []byte { le.PutUint64(b[chunkIdxAt+recordPrefixLen:], 7); return resum(b) }},
		{"chunk index offset", "ChunkIndex.chunk_start_offset",
			func(b []byte) []byte { le.PutUint64(b[chunkIdxAt+recordPrefixLen+16:], 9); return resum(b) }},
		{"data end crc", "DataEnd.data_section_crc", func(b []byte) []byte {
			r, _ := NewReader(b, "", ReaderOptions{})
			at := int64(r.footer.summaryStart) - dataEndLen
			le.PutUint32(b[at:], le.Uint32(b[at:])^1)
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.edit(bytes.Clone(good))
			ps := Doctor("x.mcap", b, ReaderOptions{})
			txt := problemsText(ps)
			if !strings.Contains(txt, tc.want) {
				t.Errorf("problems lack %q:\n%s", tc.want, txt)
			}
			if len(ps) > 0 && !errors.Is(ps[0], ErrNonconformant) && !errors.Is(ps[0], ErrCRC) {
				t.Errorf("%v is not an ErrNonconformant", ps[0])
			}
		})
	}
	// a schema id 0 and a message before its channel, written by hand
	var b bytes.Buffer
	b.Write(Magic[:])
	h := AppendHeader(nil, "", "hand")
	h = AppendSchema(h, &Schema{ID: 0, Name: "zero"})
	h = AppendMessage(h, &Message{ChannelID: 3, LogTime: 5})
	h = AppendChannel(h, &Channel{ID: 3, Topic: "/t", MessageEncoding: "json"})
	h = appendDataEnd(h, 0)
	h = appendFooterPrefix(h, 0, 0)
	h = appendU32(h, 0)
	b.Write(h)
	b.Write(Magic[:])
	txt := problemsText(Doctor("hand.mcap", b.Bytes(), ReaderOptions{}))
	for _, want := range []string{"Schema.id: mcap: not conformant: 0 is reserved", "Message.channel_id: mcap: not conformant: channel 3 is not defined before it"} {
		if !strings.Contains(txt, want) {
			t.Errorf("hand-written file: problems lack %q:\n%s", want, txt)
		}
	}
}
