package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/pack"
)

func init() {
	register(&verb{name: "export", summary: "export a dump (pack or MCAP) as JSON lines or MCAP", run: runExport})
	register(&verb{name: "import", summary: "turn a JSON-lines export back into a pack dump", run: runImport})
}

func runExport(e *env) int {
	names := formatNames(func(f dumpfile.Format) bool { return f.Export })
	c := newCommand(e, "export", "edr-lite export --format "+strings.Join(names, "|")+" IN -o OUT|- [--compression none|lz4|zstd]",
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
to turn an MCAP file into a pack dump use "edr-lite merge IN.mcap -o OUT.pack".`,
		"edr-lite export --format jsonl dump.pack -o dump.jsonl\nedr-lite export --format jsonl dump.mcap -o - | head -3\nedr-lite export --format mcap dump.pack -o dump.mcap --compression zstd", 1, 1)
	format := c.fs.String("format", "jsonl", "output format: "+orList(names))
	comp := c.fs.String("compression", "none", "mcap: chunk compression, none, lz4 or zstd")
	keepPacked := c.fs.Bool("keep-packed", false, "mcap: write packed-struct topics as they are, not transcoded to json")
	out := c.fs.String("o", "", "output file, or - for stdout (required)")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	f, known := dumpfile.LookupFormat(*format)
	if !known || !f.Export {
		return c.usageErr("--format %q: want %s", *format, orList(names))
	}
	if f.Compressions != nil && !slices.Contains(f.Compressions, *comp) {
		return c.usageErr("--compression %q: want %s", *comp, orList(f.Compressions))
	}
	if *out == "" {
		return c.usageErr("-o OUT is required (- for stdout)")
	}
	src, err := dumpfile.Open(args[0])
	if err != nil {
		return c.fail(err)
	}
	defer src.Close()
	var rep *dumpfile.ConvertReport
	err = writeOutput(*out, e.stdout, func(w io.Writer) error {
		var err error
		rep, err = dumpfile.Export(src, *format, w, dumpfile.ExportOptions{Compression: *comp, KeepPacked: *keepPacked})
		return err
	})
	if err != nil {
		return c.fail(err)
	}
	if *out != "-" {
		fmt.Fprintf(e.stdout, "%s: %s\n", *out, convertSummary(rep))
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

// writeOutput writes through fn to stdout ("-") or to path via path.tmp
// renamed on success; it refuses to overwrite an existing file.
func writeOutput(path string, stdout io.Writer, fn func(w io.Writer) error) error {
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
	err = fn(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

func runImport(e *env) int {
	names := formatNames(func(f dumpfile.Format) bool { return f.Import })
	c := newCommand(e, "import", "edr-lite import --format "+strings.Join(names, "|")+" IN|- -o OUT.pack [--compression none|lz4|zstd]",
		`Read a JSON-lines export ("edr-lite export --format jsonl") and write its
messages, dump information (triggers survive) and metadata to a new pack dump.
Any malformed line is an error naming the line and field, and no output is
left behind. IN - reads stdin.`,
		"edr-lite import --format jsonl dump.jsonl -o dump.pack", 1, 1)
	format := c.fs.String("format", "jsonl", "input format: "+orList(names))
	out := c.fs.String("o", "", "output pack file (required; must not exist)")
	comp := c.fs.String("compression", "none", "compression of the output frames: none, lz4 or zstd")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	if f, known := dumpfile.LookupFormat(*format); !known || !f.Import {
		return c.usageErr("--format %q: want %s", *format, orList(names))
	}
	if *out == "" || *out == "-" {
		return c.usageErr("-o OUT.pack is required (a file)")
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
	return exitOK
}
