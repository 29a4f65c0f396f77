package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/edr-lite/edr-lite/evidence"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/defaults"
	"github.com/edr-lite/edr-lite/internal/durable"
	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/pack"
)

func init() {
	register(&verb{name: "export", summary: "export a dump (pack or MCAP) as JSON lines, MCAP, Parquet tables, JPEG frames or MP4", run: runExport})
	register(&verb{name: "import", summary: "turn a JSON-lines export, a JPEG folder, an MP4 file or a CAN log into a dump", run: runImport})
}

func runExport(e *env) int {
	names := formatNames(func(f dumpfile.Format) bool { return f.Export })
	c := newCommand(e, "export", "edr-lite export --format "+strings.Join(names, "|")+" IN -o OUT|- [--compression none|lz4|zstd] [--topics G,...] [--exclude G,...] [--from T] [--to T]\n"+
		"  edr-lite export --format parquet DUMP... -o DIR [--vehicle ID] [--schema TOPIC=LAYOUTFILE]...",
		`Export a dump, pack or MCAP, as JSON lines, readable with head and jq,
streamable and appendable. The first line is a header: {"format":"edr-lite-jsonl","version":1,
"writer","created_ns","topics":[{"topic","name","channel","type","messages"}],
"dump_info":{...triggers, per-topic accounting...},"metadata":{NAME: base64}}.
Then one line per message, in file order:
  {"seq":0,"topic":"vehicle/speed","ts":...,"gen_ts":...,"data":"BASE64"}
ts is the capture time, gen_ts the producer time; "done_ts" appears when the
recorded capture time was unknown, "meta" when the message has meta bytes,
"data" is absent for a message without data. "edr-lite import" turns it back
into a pack dump with the same messages, times, channels, dump info and
metadata. -o - writes to stdout.

--format mcap writes an MCAP file (Foxglove, ros2 bag tooling): one channel
per topic and type with its message encoding and Schema record (protobuf
descriptor sets as they are), the dump information and metadata as MCAP
metadata records; --compression picks the chunk compression. Packed-struct
topics (x-edr-packed) are transcoded to json with a generated JSON Schema so
viewers plot them, their layout kept in the channel metadata so reading the
file back gives the packed bytes again; --keep-packed writes them as they are.
JSON lines carry each topic's type in the header ("types", base64 schemas).

An MCAP input (an MCAP dump, an MCAP export, a file of another tool) is read
as pack messages: a channel's topic and type, log_time as the capture time,
publish_time as the producer time, the payload as recorded, and the dump
information from its edr.* metadata. The JSON lines of an MCAP export equal
those of the pack dump it came from. To MCAP it is rewritten (recompressed);
to turn an MCAP file into a pack dump use "edr-lite merge IN.mcap -o OUT.pack".

--format parquet writes tables for query engines (DuckDB, Spark, Trino; see
docs/fleet.md) under DIR, partitioned as DIR/TABLE/vehicle=ID/date=YYYY-MM-DD/DUMP.parquet:
"messages" (one row per message: dump, topic, channel, type, capture_ns,
capture_time, producer_ns, size, trigger_reason, trigger_ns), "dumps" (one row
per dump: triggers, windows, per-topic accounting) and, per schema of the typed
topics, a table named after the schema whose rows also hold the decoded fields
as columns. A topic whose dump carries no type is typed with --schema
TOPIC=LAYOUTFILE (a packed-struct layout, docs/schemas.md; the table is named
after the file: edr.demo.Speed.layout -> edr.demo.Speed). Several dumps may be
given; existing files are not overwritten.

With a selection the export is a cut (see "edr-lite filter"): its dump
information says of what, over which window, and what was left out.

`+selectHelp,
		"edr-lite export --format jsonl dump.pack -o dump.jsonl\nedr-lite export --format jsonl dump.mcap -o - | head -3\n"+
			"edr-lite export --format mcap dump.pack -o dump.mcap --compression zstd\n"+
			"edr-lite export --format jsonl dump.pack --topics vehicle/speed --from 2s --to 3s -o - | jq .ts\n"+
			"edr-lite export --format parquet dumps/*.pack -o tables --vehicle car-17 --schema vehicle/speed=edr.demo.Speed.layout", 1, -1)
	sf := declareSelectFlags(c)
	format := c.fs.String("format", "jsonl", "output `FORMAT`: "+orList(names))
	comp := c.fs.String("compression", "none", "mcap: chunk compression, none, lz4 or zstd")
	keepPacked := c.fs.Bool("keep-packed", false, "mcap: write packed-struct topics as they are, not transcoded to json")
	out := c.fs.String("o", "", "output `FILE`, or - for stdout; a directory for parquet (required)")
	vehicle := c.fs.String("vehicle", "", parquetVehicleHelp)
	origin := c.fs.String("start", "", "mp4: the time that becomes the movie's time 0 (default the first frame's; give import's --start to get its times back)")
	var schemas multiFlag
	c.fs.Var(&schemas, "schema", "parquet: TOPIC=LAYOUTFILE decodes TOPIC with a packed-struct layout (repeatable)")
	c.enum("format", names...)
	c.enum("compression", compressions...)
	stf := declareStampFlags(c)
	skip := declareSkipDamaged(c)
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	if *format != dumpfile.FormatMCAP && *stf.signKey != "" {
		return c.usageErr("--sign-key is for --format mcap: a %s export is no dump and carries no signature", *format)
	}
	if *format != dumpfile.FormatMCAP && *format != dumpfile.FormatParquet && len(*stf.keys) > 0 {
		return c.usageErr("--key is for --format mcap (the inputs' signatures in its provenance) and parquet (in the dumps table)")
	}
	defer skip.arm()()
	sel, err := sf.parse()
	if err != nil {
		return c.usageErr("%v", err)
	}
	if err := dumpfile.NotBuilt(*format); err != nil {
		return c.fail(err)
	}
	f, known := dumpfile.LookupFormat(*format)
	if !known || !f.Export {
		return c.usageErr("--format %q: want %s", *format, orList(names))
	}
	if f.Name == dumpfile.FormatJPEGDir && !sel.All() {
		if len(args) != 1 {
			return c.usageErr("--format jpeg-dir with a selection takes one IN")
		}
		cut, cleanup, code := cutToTemp(c, args[0], *out, sel)
		if cleanup == nil {
			return code
		}
		defer cleanup()
		args = []string{cut}
	}
	if f.Dir {
		if !sel.All() && f.Name != dumpfile.FormatJPEGDir {
			return c.usageErr("--format %s exports whole dumps: cut them first with \"edr-lite filter\"", f.Name)
		}
		keys, err := stf.keys.load()
		if err != nil {
			return c.fail(err)
		}
		return exportDir(c, e, f, args, *out, *vehicle, schemas, keys)
	}
	if len(args) != 1 {
		return c.usageErr("--format %s takes one IN", *format)
	}
	if len(schemas) > 0 || *vehicle != "" {
		return c.usageErr("--schema and --vehicle are for --format parquet")
	}
	if f.Compressions != nil && !slices.Contains(f.Compressions, *comp) {
		return c.usageErr("--compression %q: want %s", *comp, orList(f.Compressions))
	}
	if *out == "" {
		return c.usageErr("-o OUT is required (- for stdout)")
	}
	var originNs int64
	if *origin != "" {
		t, err := filter.ParseTime(*origin)
		if err != nil || t.Offset() || f.Name != dumpfile.FormatMP4 {
			return c.usageErr("--start %q: for --format mp4, nanoseconds since the epoch or RFC 3339", *origin)
		}
		originNs = t.At(0)
	}
	eo := dumpfile.ExportOptions{Compression: *comp, KeepPacked: *keepPacked, OriginNs: originNs}
	if f.Name == dumpfile.FormatMCAP {
		if eo.Stamp, err = stf.stamp(c, args); err != nil {
			return c.fail(err)
		}
	}
	if !sel.All() {
		return exportCut(c, args[0], *out, *format, eo, sel)
	}
	src, err := dumpfile.Open(args[0])
	if err != nil {
		return c.fail(err)
	}
	defer src.Close()
	c.warnSkipped(src)
	var rep *dumpfile.ConvertReport
	err = writeOutput(*out, *format, e.stdout, func(w io.Writer) error {
		var err error
		rep, err = dumpfile.Export(src, *format, w, eo)
		return err
	})
	if err != nil {
		return c.fail(err)
	}
	if *out != "-" {
		fmt.Fprintf(e.stdout, "%s: %s\n", *out, convertSummary(rep))
	}
	for _, n := range append(rep.Notes, rep.Warnings...) {
		fmt.Fprintf(e.stderr, "warning: %s\n", n)
	}
	return exitOK
}

// exportCut exports what sel keeps of in: a cut (dumpfile.Rewrite),
// written straight to MCAP, or for JSON lines to a temporary pack dump
// beside out (the header lists the cut's topics and counts, known only
// once it is written) that is then exported.
func exportCut(c *command, in, out, format string, eo dumpfile.ExportOptions, sel filter.Selection) int {
	comp, keepPacked := eo.Compression, eo.KeepPacked
	info, err := dumpfile.ReadInfo(in)
	if err != nil {
		return c.fail(err)
	}
	held, fromNs, toNs, usage, err := c.selectIn(sel, info)
	if usage != nil {
		return c.usageErr("%v", usage)
	}
	if err != nil {
		return c.fail(err)
	}
	src, err := dumpfile.Open(in)
	if err != nil {
		return c.fail(err)
	}
	defer src.Close()
	c.warnSkipped(src)
	opts := dumpfile.RewriteOptions{Format: dumpfile.FormatPack, Writer: "edr-lite export", Topics: dumpfile.TopicFilter(sel.Topics), Cut: true, KeepPacked: keepPacked}
	if fromNs != filter.MinNs || toNs != filter.MaxNs {
		opts.Window = &dumpfile.Window{FromNs: fromNs, ToNs: toNs}
	}
	empty := func(err error) int {
		if errors.Is(err, dumpfile.ErrEmpty) {
			err = sel.Empty(held, fromNs, toNs)
		}
		return c.fail(err)
	}
	if format == dumpfile.FormatMCAP {
		opts.Format, opts.Compression, opts.Stamp = dumpfile.FormatMCAP, comp, eo.Stamp
		o := dumpfile.Output{Path: out}
		if out == "-" {
			o = dumpfile.Output{W: c.e.stdout}
		} else if _, err := os.Stat(out); err == nil {
			return c.fail(fmt.Errorf("%s exists; refusing to overwrite", out))
		}
		rep, err := dumpfile.Rewrite([]*dumpfile.Source{src}, o, opts)
		if err != nil {
			return empty(err)
		}
		c.warnNotes(rep.Notes)
		if out != "-" {
			fmt.Fprintf(c.e.stdout, "%s: %d messages, %s of data, %s written\n", out, rep.Messages, units.FormatSize(int64(rep.Bytes)), units.FormatSize(rep.Parts[0].Size))
		}
		return exitOK
	}
	dir := os.TempDir()
	if out != "-" {
		dir = filepath.Dir(out)
	}
	tmp, err := os.MkdirTemp(dir, ".edr-lite-export-")
	if err != nil {
		return c.fail(err)
	}
	defer os.RemoveAll(tmp)
	cut := filepath.Join(tmp, "cut.pack")
	c.temp = map[string]string{cut: "the cut of " + in}
	if _, err := dumpfile.Rewrite([]*dumpfile.Source{src}, dumpfile.Output{Path: cut}, opts); err != nil {
		return empty(err)
	}
	cs, err := dumpfile.Open(cut)
	if err != nil {
		return c.fail(err)
	}
	defer cs.Close()
	var rep *dumpfile.ConvertReport
	err = writeOutput(out, format, c.e.stdout, func(w io.Writer) error {
		var err error
		rep, err = dumpfile.Export(cs, format, w, eo)
		return err
	})
	if err != nil {
		return c.fail(err)
	}
	if out != "-" {
		fmt.Fprintf(c.e.stdout, "%s: %s\n", out, convertSummary(rep))
	}
	for _, n := range append(rep.Notes, rep.Warnings...) {
		fmt.Fprintf(c.e.stderr, "warning: %s\n", n)
	}
	return exitOK
}

// cutToTemp writes what sel keeps of in to a temporary pack file beside
// out; cleanup (nil on failure, with the exit code) removes it.
func cutToTemp(c *command, in, out string, sel filter.Selection) (string, func(), int) {
	info, err := dumpfile.ReadInfo(in)
	if err != nil {
		return "", nil, c.fail(err)
	}
	held, fromNs, toNs, usage, err := c.selectIn(sel, info)
	if usage != nil {
		return "", nil, c.usageErr("%v", usage)
	}
	if err != nil {
		return "", nil, c.fail(err)
	}
	src, err := dumpfile.Open(in)
	if err != nil {
		return "", nil, c.fail(err)
	}
	defer src.Close()
	c.warnSkipped(src)
	opts := dumpfile.RewriteOptions{Format: dumpfile.FormatPack, Writer: "edr-lite export", Topics: dumpfile.TopicFilter(sel.Topics), Cut: true}
	if fromNs != filter.MinNs || toNs != filter.MaxNs {
		opts.Window = &dumpfile.Window{FromNs: fromNs, ToNs: toNs}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(out)), ".edr-lite-export-")
	if err != nil {
		return "", nil, c.fail(err)
	}
	cut := filepath.Join(tmp, "cut.pack")
	c.temp = map[string]string{cut: "the cut of " + in}
	if _, err := dumpfile.Rewrite([]*dumpfile.Source{src}, dumpfile.Output{Path: cut}, opts); err != nil {
		os.RemoveAll(tmp)
		if errors.Is(err, dumpfile.ErrEmpty) {
			err = sel.Empty(held, fromNs, toNs)
		}
		return "", nil, c.fail(err)
	}
	return cut, func() { os.RemoveAll(tmp) }, exitOK
}

// exportDir writes each dump to a directory format (parquet, jpeg-dir).
func exportDir(c *command, e *env, f dumpfile.Format, args []string, dir, vehicle string, specs multiFlag, keys *evidence.Keyring) int {
	if dir == "" || dir == "-" {
		return c.usageErr("-o DIR is required (a directory) for --format %s", f.Name)
	}
	files := map[string]string{}
	for _, s := range specs {
		topic, file, ok := strings.Cut(s, "=")
		if !ok || topic == "" || file == "" {
			return c.usageErr("--schema %q: want TOPIC=LAYOUTFILE", s)
		}
		files[topic] = file
	}
	schemas, err := config.LayoutSchemas(files, nil)
	if err != nil {
		return c.usageErr("--schema: %v", err)
	}
	held := map[string]bool{} // the inputs' topics, for a --schema of a topic none has
	var heldNames []string
	for _, in := range args {
		src, err := dumpfile.Open(in)
		if err != nil {
			return c.fail(err)
		}
		c.warnSkipped(src)
		for _, t := range src.Topics() {
			if !held[t.Name] {
				heldNames = append(heldNames, t.Name)
			}
			held[t.Name], held[t.String()] = true, true // a --schema names a topic, or a topic#channel
		}
		v := vehicle
		if v == "" {
			di, _ := src.DumpInfo()
			v = di.Host
		}
		var rep *dumpfile.ConvertReport
		if f.Name == dumpfile.FormatParquet {
			rep, err = exportParquet(src, dir, v, schemas, keys)
			if err == nil {
				var warn []string
				warn, err = dumpfile.AttachmentWarnings(src, f.Name)
				rep.Warnings = append(rep.Warnings, warn...)
			}
		} else {
			rep, err = dumpfile.ExportDir(src, f.Name, dir, dumpfile.ExportOptions{Vehicle: v})
		}
		src.Close()
		if err != nil {
			return c.fail(err)
		}
		for _, n := range rep.Warnings {
			fmt.Fprintf(e.stderr, "warning: %s\n", n)
		}
		if f.Name == dumpfile.FormatJPEGDir {
			fmt.Fprintf(e.stdout, "%s: %d images of %s, %s\n", dir, rep.Messages, rep.Files[0].Table, units.FormatSize(rep.Written))
			continue
		}
		var tables []string
		for _, t := range rep.Files {
			tables = append(tables, fmt.Sprintf("%s (%d rows)", t.Table, t.Rows))
		}
		fmt.Fprintf(e.stdout, "%s: %s; tables %s\n", in, convertSummary(rep), strings.Join(tables, ", "))
		for _, n := range rep.Notes {
			fmt.Fprintf(e.stdout, "  note: %s\n", n)
		}
	}
	for _, topic := range slices.Sorted(maps.Keys(schemas)) {
		if !held[topic] { // a typo: the topic's table would be silently untyped
			c.warnNotes([]string{fmt.Sprintf("--schema %s: no input has this topic, not used (their topics: %s)", topic, strings.Join(heldNames, ", "))})
		}
	}
	return exitOK
}

// formatNames returns the names of the formats that pass keep, sorted.
func formatNames(keep func(f dumpfile.Format) bool) []string {
	var names []string
	for _, f := range dumpfile.Formats() {
		if keep(f) {
			names = append(names, f.Name)
		}
	}
	slices.Sort(names)
	return names
}

// orList spells a list of choices: "a", "a or b", "a, b or c".
func orList(choices []string) string {
	if len(choices) <= 1 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

// convertSummary says what an export or import carried: topics when the
// format lists them, messages and data, bytes written when it counts them.
func convertSummary(rep *dumpfile.ConvertReport) string {
	s := fmt.Sprintf("%d messages, %s of data", rep.Messages, units.FormatSize(int64(rep.Bytes)))
	if rep.Topics >= 0 {
		s = fmt.Sprintf("%d topics, ", rep.Topics) + s
	}
	if rep.Written >= 0 {
		s += ", " + units.FormatSize(rep.Written) + " written"
	}
	return s
}

// writeOutput writes format through fn to stdout ("-") or to path via
// path.tmp renamed on success; it refuses to overwrite an existing file.
func writeOutput(path, format string, stdout io.Writer, fn func(w io.Writer) error) error {
	if path == "-" {
		return fn(stdout)
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s exists; refusing to overwrite", path)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	// The dumps' write path: space preallocated ahead, writeback started
	// as the file fills, one fsync at the end (an uncompressed MCAP export
	// ran at 0.74-0.80 of a plain write + fsync of its bytes through a
	// plain file, 0.79-0.96 this way; docs/performance.md).
	// An MP4 is written with seeks (its sizes after its samples): a plain
	// file.
	var d interface {
		io.Writer
		Finish() error
		Abort() error
	} = durable.New(f, tmp, durable.Options{})
	if format == dumpfile.FormatMP4 {
		d = plainFile{f}
	}
	if err = fn(d); err == nil {
		err = d.Finish()
	} else {
		d.Abort()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// plainFile is an *os.File with durable.File's Finish and Abort.
type plainFile struct{ *os.File }

func (f plainFile) Finish() error { return errors.Join(f.Sync(), f.Close()) }
func (f plainFile) Abort() error  { return f.Close() }

func runImport(e *env) int {
	names := formatNames(func(f dumpfile.Format) bool { return f.Import || f.Camera || f.Bus })
	c := newCommand(e, "import", "edr-lite import --format jsonl IN|- -o OUT.pack|OUT.mcap [--compression none|lz4|zstd]\n"+
		"  edr-lite import --format jpeg-dir DIR -o OUT.pack|OUT.mcap [--topic T] [--time name,exif,rate] [--start T] [--fps F] [--tz ZONE]\n"+
		"  edr-lite import --format mp4 FILE -o OUT.pack|OUT.mcap [--topic T] [--start T|mtime] [--strict]\n"+
		"  edr-lite import --format candump|asc FILE -o OUT.pack|OUT.mcap [--dbc [BUS=]FILE]",
		`Read a JSON-lines export ("edr-lite export --format jsonl") and write its
messages, dump information (triggers survive) and metadata to a new pack dump,
or MCAP when OUT ends in .mcap (as "edr-lite export --format mcap" writes the
pack dump). Any malformed line is an error naming the line and field, and no
output is left behind. IN - reads stdin.

--format jpeg-dir reads a folder of .jpg / .jpeg files as one topic of
foxglove.CompressedImage messages (protobuf, with its FileDescriptorSet as
the topic's schema), one per image at its time. --time lists where a time
comes from, tried in order for each file: "name" (a timestamp in the file
name: 19-digit ns, 16/13/10-digit us/ms/s, ISO 8601 such as
20261202T133222.052Z, 20261202_133222_052000; docs/media.md), "exif"
(DateTimeOriginal with SubSecTimeOriginal and OffsetTimeOriginal), "rate"
(--start plus the file's position in name order over --fps). Wall-clock
times without a zone are in --tz (default UTC). Files that are not JPEGs
or have no time are skipped and named on stderr. A JPEG cut short (no
end-of-image marker) is imported as it is, one with no image data
skipped; each is named in a warning and counted.

--format mp4 reads the first H.264 or H.265 video track of an MP4 file,
plain or fragmented, as foxglove.CompressedVideo messages: Annex B, the
parameter sets before each key frame, the presentation time as the
message's timestamp and producer time, the decode time as its capture time
(so B-frames stay in decode order). --start is the time of the movie's time
0, default the file's creation time (mvhd); a file without one (ffmpeg
writes 0) is refused unless --start is given. --start mtime takes the
file's modification time as the end of its last frame (a recorder writes
its file last when it stops). A file cut short (a copy interrupted, power
lost while recording) gives every sample wholly before the cut, with a
warning naming the file, the offset and the samples lost. A damaged or
hostile file is refused with the box and offset at fault. Video with
B-frames is imported as it is; written to MCAP it gets a warning: Foxglove
cannot play it.

--strict refuses (exit 1, nothing written) an input that is damaged: an
MP4 or a JPEG cut short.

The output is pack, or MCAP when OUT ends in .mcap. The topic is --topic,
default camera/ and the input's base name ("front/" is camera/front). Camera
files can also be given directly to merge, replay, rules test, info and cat
(with the default topic and times); "edr-lite export --format jpeg-dir|mp4"
writes them back.

--format candump reads a candump log (can-utils' candump -l: "(TIME) can0
123#DEADBEEF"), --format asc a Vector ASC file: one topic of CAN frames per
bus, can/BUS (edr.can.Frame, or edr.can.FDFrame for a bus with CAN FD
frames), error frames on can/BUS/errors (docs/can.md). A line that is not a
frame is refused with its line and column. Such files can also be given
directly to every offline verb; "edr-lite export --format candump|asc" writes
the CAN frame topics of any dump back.`,
		"edr-lite import --format jsonl dump.jsonl -o dump.pack\n"+
			"edr-lite import --format jpeg-dir front/ --topic camera/front -o front.pack\n"+
			"edr-lite import --format jpeg-dir frames/ --time rate --start 2026-12-02T10:15:00Z --fps 30 -o frames.mcap\n"+
			"edr-lite import --format mp4 drive.mp4 --topic camera/video --start 2026-12-02T10:15:00Z -o video.pack\n"+
			"edr-lite import --format mp4 ffmpeg-made.mp4 --start mtime -o video.mcap", 1, 1)
	format := c.fs.String("format", "jsonl", "input `FORMAT`: "+orList(names))
	out := c.fs.String("o", "", "output `FILE`: pack, or MCAP when named *.mcap (required; must not exist)")
	comp := c.fs.String("compression", "none", "compression of the output frames: none, lz4 or zstd")
	topic := c.fs.String("topic", "", "jpeg-dir, mp4: the `TOPIC` of the messages (default camera/ + the input's base name)")
	frameID := c.fs.String("frame-id", "", "jpeg-dir, mp4: the messages' frame_id (default the topic)")
	timeSrc := c.fs.String("time", defaults.JPEGTimeSources, "jpeg-dir: where a frame's time comes from, in order: name, exif, rate")
	start := c.fs.String("start", "", "mp4: the time of the movie's start, or mtime (the file's modification time as its end); jpeg-dir: the first frame's time for --time rate (ns since the epoch or RFC 3339)")
	strict := c.fs.Bool("strict", false, "jpeg-dir, mp4: refuse a damaged input (a JPEG or an MP4 cut short) instead of importing what it holds")
	fps := c.fs.Float64("fps", 0, "jpeg-dir: frames per second for --time rate")
	tz := c.fs.String("tz", "UTC", "jpeg-dir: the time `ZONE` of times without one (IANA name, e.g. Europe/Berlin)")
	c.enum("format", names...)
	c.enum("compression", compressions...)
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	if err := dumpfile.NotBuilt(*format); err != nil {
		return c.fail(err)
	}
	f, known := dumpfile.LookupFormat(*format)
	if !known || !(f.Import || f.Camera || f.Bus) {
		return c.usageErr("--format %q: want %s", *format, orList(names))
	}
	if *out == "" || *out == "-" {
		return c.usageErr("-o OUT is required (a file)")
	}
	if len(c.dbc.vals) > 0 && !f.Bus {
		return c.usageErr("--dbc decodes the frames of a candump or ASC input as it is imported; import first, then edr-lite filter --dbc FILE DUMP -o OUT")
	}
	if f.Bus {
		for _, fl := range []string{"topic", "frame-id", "time", "start", "fps", "tz"} {
			if c.set(fl) {
				return c.usageErr("--%s is for --format jpeg-dir and mp4", fl)
			}
		}
		return importCAN(c, f.Name, args[0], *out, *comp)
	}
	if f.Camera {
		return importCamera(c, f.Name, args[0], *out, *comp, *topic, *frameID, *timeSrc, *start, *fps, *tz, *strict)
	}
	for _, fl := range []string{"topic", "frame-id", "time", "start", "fps", "tz", "strict"} {
		if c.set(fl) {
			return c.usageErr("--%s is for --format jpeg-dir and mp4", fl)
		}
	}
	cp, err := parseCompression(*comp)
	if err != nil {
		return c.usageErr("%v", err)
	}
	var in io.Reader = os.Stdin
	if args[0] != "-" {
		f, err := dumpfile.OpenRegular(args[0])
		if err != nil {
			return c.fail(err)
		}
		defer f.Close()
		in = f
	}
	if _, err := os.Stat(*out); err == nil {
		return c.fail(fmt.Errorf("%s exists; refusing to overwrite", *out))
	}
	if strings.EqualFold(filepath.Ext(*out), ".mcap") {
		return importJSONLToMCAP(c, in, args[0], *out, *format, *comp)
	}
	tmp := *out + ".tmp"
	rep, err := dumpfile.Import(in, *format, func(o pack.WriterOptions) (*pack.Writer, error) {
		o.Compression = cp
		return pack.Create(tmp, o)
	})
	if err == nil {
		err = os.Rename(tmp, *out)
	}
	if err != nil {
		os.Remove(tmp)
		return c.fail(fmt.Errorf("%s: %w", args[0], err))
	}
	fmt.Fprintf(e.stdout, "%s: %s\n", *out, convertSummary(rep))
	c.warnNotes(rep.Notes)
	return exitOK
}

// importJSONLToMCAP imports JSON lines into a temporary pack dump beside
// out, then exports that as MCAP to out (what "edr-lite export --format
// mcap" writes of the pack dump): a .mcap name gets an MCAP file, as the
// other imports give it.
func importJSONLToMCAP(c *command, in io.Reader, name, out, format, comp string) int {
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(out)), ".edr-lite-import-")
	if err != nil {
		return c.fail(err)
	}
	defer os.RemoveAll(tmp)
	packed := filepath.Join(tmp, "import.pack")
	imp, err := dumpfile.Import(in, format, func(o pack.WriterOptions) (*pack.Writer, error) {
		return pack.Create(packed, o)
	})
	if err != nil {
		return c.fail(fmt.Errorf("%s: %w", name, err))
	}
	src, err := dumpfile.Open(packed)
	if err != nil {
		return c.fail(err)
	}
	defer src.Close()
	var rep *dumpfile.ConvertReport
	if err := writeOutput(out, dumpfile.FormatMCAP, c.e.stdout, func(w io.Writer) error {
		rep, err = dumpfile.Export(src, dumpfile.FormatMCAP, w, dumpfile.ExportOptions{Compression: comp})
		return err
	}); err != nil {
		return c.fail(fmt.Errorf("%s: %w", name, err))
	}
	fmt.Fprintf(c.e.stdout, "%s: %s\n", out, convertSummary(rep))
	c.warnNotes(append(append(imp.Notes, rep.Notes...), rep.Warnings...))
	return exitOK
}

// warnNotes prints warnings a library returned (one line each).
func (c *command) warnNotes(notes []string) {
	for _, n := range notes {
		fmt.Fprintf(c.e.stderr, "edr-lite %s: warning: %s\n", c.fs.Name(), n)
	}
}

// importCAN imports a candump log or an ASC file: its Source
// (dumpfile.OpenCANLog) rewritten to a pack or MCAP file.
func importCAN(c *command, format, in, out, comp string) int {
	outFormat := dumpfile.FormatPack
	if strings.EqualFold(filepath.Ext(out), ".mcap") {
		outFormat = dumpfile.FormatMCAP
	}
	if _, err := os.Stat(out); err == nil {
		return c.fail(fmt.Errorf("%s exists; refusing to overwrite", out))
	}
	src, err := dumpfile.OpenCANLog(in, format)
	if err != nil {
		return c.fail(err)
	}
	defer src.Close()
	for _, n := range src.Notes() {
		fmt.Fprintf(c.e.stderr, "edr-lite import: warning: %s\n", n)
	}
	rep, err := dumpfile.Rewrite([]*dumpfile.Source{src}, dumpfile.Output{Path: out},
		dumpfile.RewriteOptions{Format: outFormat, Compression: comp, Writer: "edr-lite import"})
	if err != nil {
		return c.fail(err)
	}
	var topics []string
	for _, t := range src.Topics() {
		topics = append(topics, t.String())
	}
	fmt.Fprintf(c.e.stdout, "%s: %s, %d messages, %s of data, %s written\n", out, strings.Join(topics, ", "),
		rep.Messages, units.FormatSize(int64(rep.Bytes)), units.FormatSize(rep.Parts[0].Size))
	return exitOK
}

// warnSkipped prints what a camera input left out, and what of it is
// damaged, one line per file.
func (c *command) warnSkipped(src *dumpfile.Source) {
	for _, n := range src.Notes() {
		fmt.Fprintf(c.e.stderr, "edr-lite %s: warning: skipped %s\n", c.fs.Name(), n)
	}
	c.warnNotes(src.Damaged())
}

// set reports whether flag name was given on the command line.
func (c *command) set(name string) bool {
	given := false
	c.fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == name })
	return given
}
