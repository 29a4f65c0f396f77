package mcap

import (
	"bytes"
	"io"
	"testing"
)

// BenchmarkRecover times Recover of an intact file beside two baselines in
// the same run: copying the file's bytes (the floor), and rewriting it
// record by record through the Reader and the Writer (what any tool that
// re-chunks a file costs). The figure that matters is recover/rewrite.
func BenchmarkRecover(b *testing.B) {
	msgs := testMessages(3000)
	for _, comp := range []string{CompressionNone, CompressionZstd} {
		file := recoverFile(b, comp, 256<<10, msgs)
		var out bytes.Buffer
		b.Run("comp="+comp+"/recover", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(file)))
			for b.Loop() {
				out.Reset()
				if _, err := Recover("bench.mcap", file, &out, RecoverOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("comp="+comp+"/rewrite", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(file)))
			for b.Loop() {
				out.Reset()
				r, _ := NewReader(file, "bench.mcap", ReaderOptions{})
				w, _ := NewWriter(&out, Options{Compression: comp, ChunkSize: 256 << 10})
				info, _ := r.Info()
				for _, s := range info.Schemas {
					w.AddSchema(s.Name, s.Encoding, s.Data)
				}
				for _, c := range info.Channels {
					w.AddChannel(c.SchemaID, c.Topic, c.MessageEncoding, c.Metadata)
				}
				if err := r.Messages(func(_ *Channel, m *Message) error { return w.WriteMessage(m) }); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("comp="+comp+"/copy", func(b *testing.B) {
			b.SetBytes(int64(len(file)))
			for b.Loop() {
				out.Reset()
				io.Copy(&out, bytes.NewReader(file))
			}
		})
		if out.Len() == 0 {
			b.Fatal("nothing written")
		}
	}
}
