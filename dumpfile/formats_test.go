package dumpfile

import (
	"bytes"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

func TestFormats(t *testing.T) {
	want := slices.Concat([]Format{
		{Name: FormatPack, Open: true, Attachments: true},
		{Name: FormatMCAP, Open: true, Export: true, Compressions: []string{"none", "lz4", "zstd"}, Attachments: true},
		{Name: FormatJSONL, Open: true, Export: true, Import: true, Attachments: true},
		{Name: FormatParquet, Export: true, Dir: true},
	}, wantCameraFormats, []Format{
		{Name: FormatCandump, Open: true, Export: true, Bus: true},
		{Name: FormatASC, Open: true, Export: true, Bus: true},
	})
	if got := Formats(); !reflect.DeepEqual(got, want) {
		t.Errorf("Formats:\n got %+v\nwant %+v", got, want)
	}
	Formats()[1].Compressions[0] = "changed"
	if f, ok := LookupFormat(FormatMCAP); !ok || f.Compressions[0] != "none" {
		t.Errorf("LookupFormat(mcap) = %+v, %v after a caller changed a copy", f, ok)
	}
	if _, ok := LookupFormat("csv"); ok {
		t.Error("LookupFormat(csv) found a format")
	}
	// every row Detect knows reads its files every way
	for _, f := range formats {
		if (f.magic != nil) != (f.open != nil && f.openBytes != nil && f.info != nil && f.walk != nil && f.verify != nil) {
			t.Errorf("format %s: magic %q but not every reading function, or the other way round", f.Name, f.magic)
		}
		// camera rows are recognised by a sniff or as a directory, and read
		// as Sources (no verify, recover or reading from memory)
		if detected := f.magic != nil || f.sniff != nil || f.dir != nil; detected != (f.open != nil && f.info != nil && f.walk != nil) {
			t.Errorf("format %s: recognised by Detect (%v) but not open, info and walk, or the other way round", f.Name, detected)
		}
	}
	if _, err := OpenBytes("junk", []byte("not a dump"), mcap.ReaderOptions{}); err == nil ||
		err.Error() != `junk: dumpfile: not a `+wantReadable+` file: it starts with "not a du" (pack starts with "EDRPACK\x00", MCAP with "\x89MCAP", JSON lines with "{\"format\":\"edr-lite-jsonl\"", `+wantCameraStarts+`candump log starts with "(SECONDS.", ASC starts with "date " or "base ")` {
		t.Errorf("OpenBytes(junk): %v", err)
	}
}

// TestExportEveryWay exports a pack dump and its MCAP export to every
// format Export writes, and reads the exports back: the MCAP exports
// stream as the pack dump, the JSON lines of both sources are the same and
// import to a dump that streams as the pack dump.
func TestExportEveryWay(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.pack")
	writeRichPack(t, p, 1000, "a")
	sources := []*Source{openSource(t, p), openSource(t, exportToMCAP(t, p, mcap.CompressionNone))}
	want := streamAll(t, sources[0])
	var lines []string
	for _, src := range sources {
		for _, comp := range []string{"", "lz4"} {
			var b bytes.Buffer
			rep, err := Export(src, FormatMCAP, &b, ExportOptions{Compression: comp})
			if err != nil || rep.Messages != 60 || rep.Topics != -1 || rep.Written != int64(b.Len()) {
				t.Fatalf("%s to MCAP (%q): %+v, %v", src.Format, comp, rep, err)
			}
			back, err := OpenBytes("export.mcap", b.Bytes(), mcap.ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sameStream(t, src.Format+" to MCAP", streamAll(t, back), want)
			back.Close()
		}
		var b bytes.Buffer
		rep, err := Export(src, FormatJSONL, &b, ExportOptions{Compression: "ignored"})
		if err != nil || rep.Messages != 60 || rep.Topics != 2 || rep.Written != -1 {
			t.Fatalf("%s to JSON lines: %+v, %v", src.Format, rep, err)
		}
		lines = append(lines, b.String())
	}
	if lines[0] != lines[1] {
		t.Errorf("JSON lines of the MCAP export differ from the pack dump's:\n%s\n%s", lines[1][:200], lines[0][:200])
	}
	var out bytes.Buffer
	rep, err := Import(strings.NewReader(lines[0]), FormatJSONL, func(o pack.WriterOptions) (*pack.Writer, error) {
		return pack.NewStreamWriter(&out, o)
	})
	if err != nil || rep.Messages != 60 || rep.Topics != 2 {
		t.Fatalf("import: %+v, %v", rep, err)
	}
	back, err := OpenBytes("import.pack", out.Bytes(), mcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	sameStream(t, "JSON lines imported", streamAll(t, back), want)

	for _, bad := range []struct {
		format string
		opts   ExportOptions
		has    string
	}{
		{FormatPack, ExportOptions{}, `cannot export to format "pack"`},
		{"csv", ExportOptions{}, `cannot export to format "csv"`},
		{FormatMCAP, ExportOptions{Compression: "gzip"}, `compression "gzip"`},
	} {
		if _, err := Export(sources[0], bad.format, &out, bad.opts); err == nil || !strings.Contains(err.Error(), bad.has) {
			t.Errorf("Export to %s %+v: %v, want an error with %q", bad.format, bad.opts, err, bad.has)
		}
	}
	if _, err := Import(strings.NewReader(""), FormatMCAP, nil); err == nil || !strings.Contains(err.Error(), `cannot import format "mcap"`) {
		t.Errorf("Import of MCAP: %v", err)
	}
}
