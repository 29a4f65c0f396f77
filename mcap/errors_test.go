package mcap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"
)

func messagesErr(b []byte, opt ReaderOptions) error {
	r, err := NewReader(b, "bad.mcap", opt)
	if err != nil {
		return err
	}
	return r.Messages(func(*Channel, *Message) error { return nil })
}

func TestReaderRejects(t *testing.T) {
	msgs := testMessages(50)
	plain := encode(t, Options{ChunkSize: 4096}, msgs)
	lz := encode(t, Options{ChunkSize: 4096, Compression: CompressionLZ4}, msgs)
	zs := encode(t, Options{ChunkSize: 4096, Compression: CompressionZstd}, msgs)
	firstChunk := func(b []byte) int { // offset of the first Chunk record's records field
		at := bytes.IndexByte(b[magicLen:], byte(OpChunk)) + magicLen
		for Opcode(b[at]) != OpChunk {
			at++
		}
		return at + recordPrefixLen + chunkFixedLen
	}
	flip := func(b []byte, at int) []byte {
		c := bytes.Clone(b)
		c[at] ^= 0x40
		return c
	}
	f := func(name string, in []byte, opt ReaderOptions, want error, orWant ...error) {
		t.Helper()
		err := messagesErr(in, opt)
		if !errors.Is(err, want) && (len(orWant) == 0 || !errors.Is(err, orWant[0])) {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
		var ce *CorruptError
		if err != nil && (!errors.As(err, &ce) || !strings.Contains(err.Error(), "bad.mcap")) {
			t.Errorf("%s: %v is not a *CorruptError naming the file", name, err)
		}
	}
	f("empty", nil, ReaderOptions{}, ErrBadMagic)
	f("not mcap", []byte("PK\x03\x04 a zip file"), ReaderOptions{}, ErrBadMagic)
	f("magic only", Magic[:], ReaderOptions{}, ErrTruncated)
	f("header truncated", plain[:magicLen+5], ReaderOptions{}, ErrTruncated)
	f("footer missing", plain[:len(plain)/2], ReaderOptions{}, ErrTruncated)
	// Chunk payload: crc for uncompressed, crc or decompression error otherwise.
	cp := firstChunk(plain)
	f("chunk bit flip", flip(plain, cp+4+8+40), ReaderOptions{}, ErrCRC)
	f("lz4 chunk bit flip", flip(lz, firstChunk(lz)+4+3+8+30), ReaderOptions{}, ErrCompression, ErrCRC)
	f("zstd chunk bit flip", flip(zs, firstChunk(zs)+4+4+8+20), ReaderOptions{}, ErrCompression, ErrCRC)
	f("lz4 chunk too large", lz, ReaderOptions{MaxChunkSize: 100}, ErrTooLarge)
	// A flipped byte in the Header's library string is only caught by the
	// data section CRC.
	f("header bit flip", flip(plain, magicLen+recordPrefixLen+4+4+2), ReaderOptions{}, ErrCRC)

	// Unknown compression and a message on an undefined channel, built by hand.
	hand := func(records ...[]byte) []byte {
		b := append([]byte{}, Magic[:]...)
		b = AppendHeader(b, "", "hand")
		for _, r := range records {
			b = append(b, r...)
		}
		b = appendDataEnd(b, 0)
		b = appendFooterPrefix(b, 0, 0)
		b = appendU32(b, 0)
		return append(b, Magic[:]...)
	}
	msg := AppendMessage(nil, &Message{ChannelID: 7, Data: []byte("x")})
	f("unknown channel", hand(msg), ReaderOptions{}, ErrUnknownChannel)
	chunk := []byte{byte(OpChunk)}
	chunk = appendU64(chunk, uint64(chunkFixedLen+4+6+8+1))
	chunk = appendU64(appendU64(chunk, 0), 0)
	chunk = appendU32(appendU64(chunk, 1), 0)
	chunk = appendString(chunk, "brotli")
	chunk = append(appendU64(chunk, 1), 0)
	f("unknown compression", hand(chunk), ReaderOptions{}, ErrCompression)
	short := AppendMessage(nil, &Message{})[:recordPrefixLen+3]
	le.PutUint64(short[1:], 3)
	f("short message", hand(short), ReaderOptions{}, ErrTruncated)
	if err := messagesErr(hand(AppendChannel(nil, &Channel{ID: 7, Topic: "t"}), msg, []byte{0x99, 1, 0, 0, 0, 0, 0, 0, 0, 42}), ReaderOptions{}); err != nil {
		t.Errorf("an unknown opcode must be skipped: %v", err)
	}

	// Summary corruption is caught by the summary CRC.
	r, err := NewReader(flip(plain, len(plain)-magicLen-footerRecordLen-10), "bad.mcap", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Info(); !errors.Is(err, ErrCRC) {
		t.Errorf("summary flip: %v", err)
	}
}

// TestTruncatedFiles cuts a file at every length: the reader never panics,
// and it either reports corruption or (cut after DataEnd) returns every
// message.
func TestTruncatedFiles(t *testing.T) {
	msgs := testMessages(20)
	for _, comp := range compressions {
		b := encode(t, Options{ChunkSize: 2048, Compression: comp}, msgs)
		summaryStart := int(le.Uint64(b[len(b)-magicLen-footerRecordLen+9:]))
		for n := range len(b) {
			var got int
			r, err := NewReader(b[:n], "cut.mcap", ReaderOptions{})
			if err == nil {
				_, err = r.Info()
			}
			if err == nil {
				err = r.Messages(func(*Channel, *Message) error { got++; return nil })
			}
			var ce *CorruptError
			switch {
			case err != nil && !errors.As(err, &ce):
				t.Fatalf("%q cut at %d: %v is not a *CorruptError", comp, n, err)
			case err == nil && (n < summaryStart || got != len(msgs)):
				t.Fatalf("%q cut at %d (summary at %d): no error, %d messages", comp, n, summaryStart, got)
			}
		}
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after < len(p) {
		n := max(f.after, 0)
		f.after = 0
		return n, errors.New("disk full")
	}
	f.after -= len(p)
	return len(p), nil
}

func TestWriterErrors(t *testing.T) {
	if _, err := NewWriter(io.Discard, Options{Compression: "brotli"}); !errors.Is(err, ErrCompression) {
		t.Errorf("unsupported compression: %v", err)
	}
	if _, err := NewWriter(&failWriter{}, Options{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("failing writer at the header: %v", err)
	}
	w, _ := NewWriter(io.Discard, Options{})
	if _, err := w.AddChannel(3, "t", "json", nil); err == nil {
		t.Error("channel with an unknown schema accepted")
	}
	if err := w.WriteMessage(&Message{ChannelID: 0}); !errors.Is(err, ErrUnknownChannel) {
		t.Errorf("message on no channel: %v", err)
	}
	s1, _ := w.AddSchema("a", "jsonschema", []byte("{}"))
	s2, _ := w.AddSchema("a", "jsonschema", []byte("{}"))
	s3, _ := w.AddSchema("a", "jsonschema", []byte("{ }"))
	if s1 != 1 || s2 != 1 || s3 != 2 {
		t.Errorf("schema ids %d %d %d, want 1 1 2", s1, s2, s3)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.AddMetadata("x", nil); !errors.Is(err, os.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}

	// A write failure in the middle is sticky and reported by Close.
	for _, after := range []int{100, 5000, 20000} {
		w, err := NewWriter(&failWriter{after: after}, Options{ChunkSize: 1024})
		if err != nil {
			t.Fatal(err)
		}
		id, _ := w.AddTopic(Topic{Name: "t"})
		var firstErr error
		for i := 0; i < 200 && firstErr == nil; i++ {
			firstErr = w.WriteMessage(&Message{ChannelID: id, Data: make([]byte, 100)})
		}
		cerr := w.Close()
		if firstErr == nil {
			t.Errorf("after=%d: no error while writing", after)
		}
		if cerr == nil || !strings.Contains(cerr.Error(), "disk full") {
			t.Errorf("after=%d: Close = %v", after, cerr)
		}
	}
}

func TestCorruptErrorText(t *testing.T) {
	err := error(&CorruptError{File: "d.mcap", Offset: 42, Field: "Chunk.uncompressed_crc", Err: ErrCRC})
	if got, want := err.Error(), "d.mcap: offset 42: Chunk.uncompressed_crc: mcap: crc mismatch"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(fmt.Errorf("wrap: %w", err), ErrCRC) {
		t.Error("does not unwrap")
	}
}

// TestAmplificationBounded: records that expand (a metadata record indexed
// thousands of times, channel records in well-compressed chunks) cannot make
// the reader keep more than the file size plus one chunk.
func TestAmplificationBounded(t *testing.T) {
	// One 4 KiB Metadata record, then 5000 MetadataIndex records at it.
	big := map[string]string{"k": strings.Repeat("x", 4096)}
	b := append([]byte{}, Magic[:]...)
	b = AppendHeader(b, "", "hand")
	mdAt := len(b)
	b = AppendMetadata(b, "m", big)
	mdLen := len(b) - mdAt
	b = appendDataEnd(b, 0)
	summary := len(b)
	b, st := beginRecord(b, OpStatistics)
	b = append(b, make([]byte, 8+2+4+4+4+4+8+8+4)...)
	b = endRecord(b, st)
	for range 5000 {
		b, st = beginRecord(b, OpMetadataIndex)
		b = appendString(appendU64(appendU64(b, uint64(mdAt)), uint64(mdLen)), "m")
		b = endRecord(b, st)
	}
	b = appendFooterPrefix(b, uint64(summary), 0)
	b = append(appendU32(b, 0), Magic[:]...)
	r, err := NewReader(b, "amp.mcap", ReaderOptions{MaxChunkSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Info(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("metadata index amplification: %v", err)
	}

	// 8 zstd chunks of 1000 channels with 1 KiB of metadata each.
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Options{Compression: CompressionZstd})
	md := map[string]string{"k": strings.Repeat("y", 1024)}
	for i := range 8000 {
		if _, err := w.AddChannel(0, fmt.Sprint("t", i), "x", md); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			_ = w.Flush()
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	// The summary holds the same channels uncompressed: Info is fine.
	r, err = NewReader(full, "amp2.mcap", ReaderOptions{MaxChunkSize: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := r.Info(); err != nil || len(info.Channels) != 8000 {
		t.Errorf("Info: %v", err)
	}
	// Without the summary, the file is small and its chunks expand.
	summaryStart := le.Uint64(full[len(full)-magicLen-footerRecordLen+9:])
	small := appendFooterPrefix(bytes.Clone(full[:summaryStart]), 0, 0)
	small = append(appendU32(small, 0), Magic[:]...)
	r, err = NewReader(small, "amp2.mcap", ReaderOptions{MaxChunkSize: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Info(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("%d-byte file: channel amplification: %v", len(small), err)
	}
}

// TestChunkLimitFitsInt: a MaxChunkSize beyond what an int holds is capped,
// so a chunk claiming more than math.MaxInt bytes is ErrTooLarge instead of
// a negative (on 32-bit, also a wrapped) buffer size.
func TestChunkLimitFitsInt(t *testing.T) {
	lz := encode(t, Options{ChunkSize: 4096, Compression: CompressionLZ4}, testMessages(50))
	at := bytes.IndexByte(lz[magicLen:], byte(OpChunk)) + magicLen
	for Opcode(lz[at]) != OpChunk {
		at++
	}
	le.PutUint64(lz[at+recordPrefixLen+16:], uint64(math.MaxInt)+1) // uncompressed_size
	err := messagesErr(lz, ReaderOptions{MaxChunkSize: math.MaxUint64})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("chunk of MaxInt+1 bytes with MaxChunkSize = MaxUint64: %v, want ErrTooLarge", err)
	}
}
