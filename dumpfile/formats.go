package dumpfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/edr-lite/edr-lite/evidence"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/jsonl"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// Format names: the --format values of the offline verbs, Info.Format and
// Source.Format.
const (
	FormatPack  = "pack"
	FormatMCAP  = "mcap"
	FormatJSONL = "jsonl"
)

// Format says what the offline verbs can do with one format.
type Format struct {
	Name string // FormatPack, FormatMCAP, FormatJSONL
	// Open: Detect recognises its files, and Open, OpenBytes, ReadInfo,
	// Walk, Verify and Recover read them.
	Open   bool
	Export bool // Export writes it
	// Dir: it is written to a directory of files, with ExportDir.
	Dir    bool
	Import bool // Import reads it into a pack dump
	// Camera: a camera file (JPEG folder, MP4), read with OpenMedia: a
	// Source of one topic, imported by a rewrite (Rewrite).
	Camera bool
	// Bus: a CAN log file (candump, ASC), read with OpenCANLog: a Source
	// of one frame topic per bus, imported by a rewrite (Rewrite).
	Bus bool
	// Compressions lists the ExportOptions.Compression values its export
	// takes; nil when its export does not compress.
	Compressions []string
	// Attachments: the format holds a dump's attachments, and exports and
	// rewrites to it carry them (exports to the others warn naming those
	// they leave out: ConvertReport.Warnings).
	Attachments bool
}

// format is one row of the format table: a Format (Open, Export and Import
// follow from the functions) and the functions that do it. A nil function
// is something the format cannot do; a row that Detect recognises (magic,
// sniff or dir) has open, info and walk.
type format struct {
	Format
	title string // as messages spell it ("MCAP")
	magic []byte // what its files start with
	// sniff recognises its files by their first magicLen bytes where a
	// prefix does not (MP4: "ftyp" at byte 4); hint says how, for errors.
	sniff func(b []byte) bool
	hint  string
	// dir recognises a directory in this format (a JPEG folder).
	dir func(path string) (bool, error)

	open      func(path string) (*Source, error)
	openBytes func(name string, b []byte, mopts mcap.ReaderOptions) (*Source, error)
	info      func(path string) (*Info, error)
	walk      func(path string, fn func(m *Msg) error) error
	verify    func(path string) (*VerifyResult, error)
	recover   func(in, out string) (*RecoverResult, error)
	export    func(src *Source, w io.Writer, opts ExportOptions) (*ConvertReport, error)
	exportDir func(src *Source, dir string, opts ExportOptions) (*ConvertReport, error)
	importTo  func(r io.Reader, mk func(pack.WriterOptions) (*pack.Writer, error)) (*ConvertReport, error)
}

// formats is the table of formats: adding one is adding a row. The camera
// files' rows (cameraFormats) are media.go's: the ECU build has none
// (camera_ecu.go).
var formats = slices.Concat([]format{
	{Format: Format{Name: FormatPack, Attachments: true}, title: "pack", magic: pack.FileMagic[:],
		open: openPack, openBytes: openPackBytes, info: packInfo, walk: walkPack, verify: verifyPack, recover: recoverPack},
	{Format: Format{Name: FormatMCAP, Compressions: []string{"none", "lz4", "zstd"}, Attachments: true}, title: "MCAP", magic: []byte("\x89MCAP"),
		open: openMCAP, openBytes: openMCAPBytes, info: mcapInfo, walk: walkMCAP, verify: verifyMCAP, recover: recoverMCAP,
		export: exportMCAP},
	{Format: Format{Name: FormatJSONL, Attachments: true}, title: "JSON lines",
		export: exportJSONL, importTo: importJSONL, magic: jsonlMagic, open: openJSONL, openBytes: openJSONLBytes, info: jsonlInfo, walk: walkJSONL,
		verify: verifyJSONL, recover: recoverJSONL},
	{Format: Format{Name: FormatParquet}, title: "Parquet",
		exportDir: exportParquet},
}, cameraFormats, []format{
	{Format: Format{Name: FormatCandump}, title: "candump log", sniff: isCandump, hint: `starts with "(SECONDS."`,
		open: openCandump, info: canInfo(FormatCandump), walk: walkCAN(FormatCandump), export: exportCandump},
	{Format: Format{Name: FormatASC}, title: "ASC", sniff: isASC, hint: `starts with "date " or "base "`,
		open: openASC, info: canInfo(FormatASC), walk: walkCAN(FormatASC), export: exportASC},
})

// ErrUnknownFormat is returned for a file that Detect does not recognise.
var ErrUnknownFormat = errors.New("dumpfile: not a " + orList(readableTitles()) + " file")

// Detect reads the first bytes of path and returns its format (one with
// Format.Open). A file of no such format is an ErrUnknownFormat naming the
// file and what it starts with.
func Detect(path string) (string, error) {
	f, err := detectFile(path)
	if err != nil {
		return "", err
	}
	return f.Name, nil
}

func detectFile(path string) (*format, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		for i := range formats {
			if f := &formats[i]; f.dir != nil {
				ok, err := f.dir(path)
				if err != nil {
					return nil, err
				}
				if ok {
					return f, nil
				}
			}
		}
		if err := notBuiltDir(path); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w: a directory without .jpg or .jpeg files", path, ErrUnknownFormat)
	}
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, magicLen)
	n, _ := io.ReadFull(f, b)
	return detect(path, b[:n])
}

// magicLen is the longest magic of the table.
var magicLen = func() int {
	n := 8 // sniff: an MP4's ftyp box header
	for _, f := range formats {
		n = max(n, len(f.magic))
	}
	return n
}()

func detect(name string, b []byte) (*format, error) {
	for i := range formats {
		if f := &formats[i]; f.magic != nil && bytes.HasPrefix(b, f.magic) || f.sniff != nil && f.sniff(b) {
			return f, nil
		}
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%s: %w: the file is empty", name, ErrUnknownFormat)
	}
	if err := notBuiltFile(name, b); err != nil {
		return nil, err
	}
	var starts []string // "pack starts with ..., MCAP with ..."
	for _, f := range formats {
		switch {
		case f.magic != nil:
			verb := "with"
			if starts == nil {
				verb = "starts with"
			}
			starts = append(starts, fmt.Sprintf("%s %s %q", f.title, verb, f.magic))
		case f.sniff != nil:
			starts = append(starts, f.title+" "+f.hint)
		}
	}
	return nil, fmt.Errorf("%s: %w: it starts with %q (%s)", name, ErrUnknownFormat,
		b[:min(len(b), 8)], strings.Join(starts, ", "))
}

// readableTitles returns the titles of the formats Detect recognises.
func readableTitles() []string {
	var titles []string
	for _, f := range formats {
		if f.magic != nil || f.sniff != nil {
			titles = append(titles, f.title)
		}
	}
	return titles
}

// orList spells a list: "a", "a or b", "a, b or c".
func orList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// Formats returns the formats the offline verbs know, in table order.
func Formats() []Format {
	out := make([]Format, len(formats))
	for i := range formats {
		out[i] = formats[i].public()
	}
	return out
}

// LookupFormat returns the format called name.
func LookupFormat(name string) (Format, bool) {
	f := lookup(name)
	if f == nil {
		return Format{}, false
	}
	return f.public(), true
}

// public returns the row's Format, its capabilities filled in.
func (f *format) public() Format {
	p := f.Format
	p.Open, p.Export, p.Import = f.open != nil, f.export != nil || f.exportDir != nil, f.importTo != nil
	p.Dir = f.exportDir != nil
	p.Camera = f.Name == FormatJPEGDir || f.Name == FormatMP4
	p.Bus = f.Name == FormatCandump || f.Name == FormatASC
	p.Compressions = slices.Clone(f.Compressions)
	return p
}

func lookup(name string) *format {
	for i := range formats {
		if formats[i].Name == name {
			return &formats[i]
		}
	}
	return nil
}

// ExportOptions configure Export.
type ExportOptions struct {
	// Compression is the compression of formats that compress their output
	// (Format.Compressions: "none", "lz4", "zstd"); "" is "none". Other
	// formats ignore it.
	Compression string
	// KeepPacked (MCAP) writes packed-struct topics as they are instead of
	// transcoding them to json (mcap.Options.KeepPacked).
	KeepPacked bool
	// Vehicle is the vehicle= partition of the Parquet tables (their
	// other options are internal/dumptable.Options: typing topics needs
	// package schema, which the readers of dumps do not link).
	Vehicle string
	// OriginNs (mp4) is the time that becomes the movie's time 0; 0 is
	// the earliest presentation time. An MP4 imported with a start time
	// and exported with the same origin keeps its times exactly.
	OriginNs int64
	// Stamp (MCAP) is written into the output (RewriteOptions.Stamp).
	Stamp *Stamp
}

// ConvertReport says what an Export or Import carried.
type ConvertReport struct {
	// Topics is the topics listed in the output's header, -1 for a format
	// whose output has no topic list.
	Topics   int
	Messages uint64
	Bytes    uint64 // data bytes (MCAP: data and meta bytes)
	// Written is the bytes written, -1 when the format does not count
	// them.
	Written int64
	// Files are the files of a directory export (Parquet), Notes what it
	// could not carry (fields without a column).
	Files []OutFile
	Notes []string
	// Warnings name what the output lacks that the dump holds: its
	// attachments, in a format that cannot hold them.
	Warnings []string
}

// Export writes the dump src to w in format (one with Format.Export):
// MCAP (mcap.ExportPack of a pack dump, mcap.ExportMCAP of an MCAP one) or
// JSON lines (jsonl.Export), the whole dump whatever was read from src
// before. On error the output is incomplete; the report says what was
// written before it, when anything was.
func Export(src *Source, format string, w io.Writer, opts ExportOptions) (*ConvertReport, error) {
	f := lookup(format)
	if f != nil && f.exportDir != nil {
		return nil, fmt.Errorf("dumpfile: %s is written to a directory (ExportDir)", format)
	}
	if f == nil || f.export == nil {
		return nil, fmt.Errorf("dumpfile: cannot export to format %q", format)
	}
	if f.Compressions != nil && opts.Compression != "" && !slices.Contains(f.Compressions, opts.Compression) {
		return nil, fmt.Errorf("dumpfile: %s: compression %q not supported", format, opts.Compression)
	}
	rep, err := f.export(src, w, opts)
	return f.warnAttachments(src, rep, err)
}

// warnAttachments adds to rep the warning that the dump's attachments were
// left out, for a format that cannot hold them.
func (f *format) warnAttachments(src *Source, rep *ConvertReport, err error) (*ConvertReport, error) {
	if err != nil || rep == nil {
		return rep, err
	}
	w, err := AttachmentWarnings(src, f.Name)
	rep.Warnings = append(rep.Warnings, w...)
	return rep, err
}

// AttachmentWarnings says which attachments of src an export to format
// leaves out: none for a format that holds them (Format.Attachments), else
// one warning naming each (for ConvertReport.Warnings; Export and
// ExportDir add it themselves).
func AttachmentWarnings(src *Source, format string) ([]string, error) {
	f := lookup(format)
	if f == nil || f.Attachments {
		return nil, nil
	}
	as, err := src.Attachments()
	if err != nil || len(as) == 0 {
		return nil, err
	}
	names := make([]string, len(as))
	for i, a := range as {
		names[i] = fmt.Sprintf("%q (%d bytes)", a.Name, a.Size)
	}
	return []string{fmt.Sprintf("%d attachment(s) of %s not carried (a %s export holds none): %s; extract them with edr-lite cat --attachment NAME",
		len(as), src.Path, f.title, strings.Join(names, ", "))}, nil
}

// ExportDir writes the dump src under dir in a directory format (one with
// Format.Dir: Parquet, package table). On error nothing is left of the
// files it wrote.
func ExportDir(src *Source, format, dir string, opts ExportOptions) (*ConvertReport, error) {
	f := lookup(format)
	if f == nil || f.exportDir == nil {
		return nil, fmt.Errorf("dumpfile: cannot export to a directory in format %q", format)
	}
	rep, err := f.exportDir(src, dir, opts)
	return f.warnAttachments(src, rep, err)
}

// Import reads a dump in format (one with Format.Import: JSON lines) from
// r and writes it to the pack Writer mk makes, which it closes. On error
// the output is incomplete and should be discarded.
func Import(r io.Reader, format string, mk func(pack.WriterOptions) (*pack.Writer, error)) (*ConvertReport, error) {
	f := lookup(format)
	if f == nil || f.importTo == nil {
		return nil, fmt.Errorf("dumpfile: cannot import format %q", format)
	}
	return f.importTo(r, mk)
}

func exportMCAP(src *Source, w io.Writer, opts ExportOptions) (*ConvertReport, error) {
	var mopts mcap.ExportOptions
	mopts.KeepPacked = opts.KeepPacked
	switch opts.Compression {
	case "lz4":
		mopts.Compression = mcap.CompressionLZ4
	case "zstd":
		mopts.Compression = mcap.CompressionZstd
	}
	if src.st != nil || src.DecodedTopics() != nil { // a camera file, CAN frames decoded: written as a rewrite is
		rep, err := Rewrite([]*Source{src}, Output{W: w}, RewriteOptions{Format: FormatMCAP, Compression: opts.Compression,
			KeepPacked: opts.KeepPacked, Writer: "edr-lite export", Stamp: opts.Stamp})
		if err != nil {
			return nil, err
		}
		return &ConvertReport{Topics: -1, Messages: rep.Messages, Bytes: rep.Bytes, Written: rep.Parts[0].Size, Notes: rep.Notes}, nil
	}
	mopts.Concurrency = mcap.ExportConcurrency(mopts.Compression)
	mopts.Seal, mopts.Stamp = opts.Stamp.sealer(evidence.FormatMCAP), opts.Stamp.mcapMetadata()
	var st mcap.ExportStats
	var err error
	if r := src.Pack(); r != nil {
		r.Rewind() // from the first frame, whatever was read before
		st, err = mcap.ExportPack(r, w, mopts)
	} else {
		st, err = mcap.ExportMCAP(src.MCAP(), w, mopts)
	}
	rep := &ConvertReport{Topics: -1, Messages: st.Messages, Bytes: st.Bytes, Written: st.Written, Notes: st.Notes}
	if err == nil { // B-frames, which Foxglove cannot play: read from the source
		var notes []string
		notes, err = VideoReorders(src)
		rep.Notes = append(rep.Notes, notes...)
	}
	return rep, err
}

// exportJSONL writes src through jsonl.Export: the header from the pack
// file's header and metadata, or from what an MCAP file carries of them
// (mcap.PackReader: an MCAP export of a pack dump gives the same header).
func exportJSONL(src *Source, w io.Writer, _ ExportOptions) (*ConvertReport, error) {
	var h jsonl.Header
	var names []string
	var sections [][]byte
	if r := src.Pack(); r != nil {
		hdr := r.Header()
		h.Writer, h.CreatedNs = hdr.Writer, hdr.CreatedNs
		h.DumpInfo, _ = r.Metadata(dumpinfo.MetadataName)
		for _, n := range r.MetadataNames() {
			if n != dumpinfo.MetadataName {
				b, _ := r.Metadata(n)
				names, sections = append(names, n), append(sections, b)
			}
		}
	} else if mp := src.MCAP(); mp != nil {
		h.Writer, h.CreatedNs = mp.Header()
		h.DumpInfo = mp.DumpInfoJSON()
		names, sections = mp.Sections()
	}
	for i, n := range names {
		if evidence.Stamped(n) { // the input's seal and provenance: true of its bytes only
			continue
		}
		if h.Metadata == nil {
			h.Metadata = map[string][]byte{}
		}
		h.Metadata[n] = sections[i]
	}
	if src.dec != nil && src.hasDI { // CAN frames decoded by --dbc: the accounting says what the DBC made of them
		b, err := json.Marshal(src.info)
		if err != nil {
			return nil, err
		}
		h.DumpInfo = b
	}
	atts, err := src.Attachments()
	if err != nil {
		return nil, err
	}
	for _, a := range atts {
		h.Attachments = append(h.Attachments, jsonl.Attachment{Name: a.Name, MediaType: a.MediaType, LogNs: a.LogNs, CreateNs: a.CreateNs, Data: a.Data})
	}
	for _, t := range src.Topics() {
		jt := jsonl.Topic{Name: t.Name, Channel: t.Channel, Type: t.Type.Schema.Name, Messages: t.Messages}
		for _, ts := range t.Types {
			jt.Types = append(jt.Types, ts.Type)
		}
		h.Topics = append(h.Topics, jt)
	}
	rep, err := jsonl.Export(w, src.Path, h, func(fn func(m *jsonl.Message) error) error {
		return src.InFileOrder(func(m *Message) error {
			return fn((*jsonl.Message)(m)) // the same fields: no copy
		})
	})
	return convertReport(rep), err
}

func importJSONL(r io.Reader, mk func(pack.WriterOptions) (*pack.Writer, error)) (*ConvertReport, error) {
	rep, err := jsonl.Import(r, mk)
	return convertReport(rep), err
}

func convertReport(rep *jsonl.Report) *ConvertReport {
	if rep == nil {
		return nil
	}
	return &ConvertReport{Topics: rep.Topics, Messages: rep.Messages, Bytes: rep.Bytes, Written: -1, Notes: rep.Notes}
}
