package main

import (
	"fmt"
	"io"
	"os"

	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/jsonl"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

func init() {
	register(&verb{name: "export", summary: "export a dump (pack or MCAP) as JSON lines or MCAP", run: runExport})
	register(&verb{name: "import", summary: "turn a JSON-lines export back into a pack dump", run: runImport})
}

func runExport(e *env) int {
	c := newCommand(e, "export", "edr-lite export --format jsonl|mcap IN -o OUT|- [--compression none|lz4|zstd]",
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
per topic with its type, the dump information and metadata as MCAP metadata
records; --compression picks the chunk compression.

An MCAP input (an MCAP dump, an MCAP export, a file of another tool) is read
as pack messages: a channel's topic and type, log_time as the capture time,
publish_time as the producer time, the payload as recorded, and the dump
information from its edr.* metadata. The JSON lines of an MCAP export equal
those of the pack dump it came from. To MCAP it is rewritten (recompressed);
to turn an MCAP file into a pack dump use "edr-lite merge IN.mcap -o OUT.pack".`,
		"edr-lite export --format jsonl dump.pack -o dump.jsonl\nedr-lite export --format jsonl dump.mcap -o - | head -3\nedr-lite export --format mcap dump.pack -o dump.mcap --compression zstd", 1, 1)
	format := c.fs.String("format", "jsonl", "output format: jsonl or mcap")
	comp := c.fs.String("compression", "none", "mcap: chunk compression, none, lz4 or zstd")
	out := c.fs.String("o", "", "output file, or - for stdout (required)")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	mopts := mcap.ExportOptions{}
	switch *format {
	case "jsonl":
	case "mcap":
		switch *comp {
		case "none":
			mopts.Compression = mcap.CompressionNone
		case "lz4":
			mopts.Compression = mcap.CompressionLZ4
		case "zstd":
			mopts.Compression = mcap.CompressionZstd
		default:
			return c.usageErr("--compression %q: want none, lz4 or zstd", *comp)
		}
	default:
		return c.usageErr("--format %q: want jsonl or mcap", *format)
	}
	if *out == "" {
		return c.usageErr("-o OUT is required (- for stdout)")
	}
	src, err := dumpfile.Open(args[0])
	if err != nil {
		return c.fail(err)
	}
	defer src.Close()
	var summary string
	err = writeOutput(*out, e.stdout, func(w io.Writer) error {
		if *format == "mcap" {
			var st mcap.ExportStats
			var err error
			if r := src.Pack(); r != nil {
				st, err = mcap.ExportPack(r, w, mopts)
			} else {
				st, err = mcap.ExportMCAP(src.MCAP(), w, mopts)
			}
			summary = fmt.Sprintf("%d messages, %s of data, %s written", st.Messages, units.FormatSize(int64(st.Bytes)), units.FormatSize(st.Written))
			return err
		}
		rep, err := jsonl.Export(src, w)
		if rep != nil {
			summary = fmt.Sprintf("%d topics, %d messages, %s of data", rep.Topics, rep.Messages, units.FormatSize(int64(rep.Bytes)))
		}
		return err
	})
	if err != nil {
		return c.fail(err)
	}
	if *out != "-" {
		fmt.Fprintf(e.stdout, "%s: %s\n", *out, summary)
	}
	return exitOK
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
	c := newCommand(e, "import", "edr-lite import --format jsonl IN|- -o OUT.pack [--compression none|lz4|zstd]",
		`Read a JSON-lines export ("edr-lite export --format jsonl") and write its
messages, dump information (triggers survive) and metadata to a new pack dump.
Any malformed line is an error naming the line and field, and no output is
left behind. IN - reads stdin.`,
		"edr-lite import --format jsonl dump.jsonl -o dump.pack", 1, 1)
	format := c.fs.String("format", "jsonl", "input format: jsonl")
	out := c.fs.String("o", "", "output pack file (required; must not exist)")
	comp := c.fs.String("compression", "none", "compression of the output frames: none, lz4 or zstd")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	if *format != "jsonl" {
		return c.usageErr("--format %q: want jsonl", *format)
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
		f, err := os.Open(args[0])
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
	rep, err := jsonl.Import(in, func(o pack.WriterOptions) (*pack.Writer, error) {
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
	fmt.Fprintf(e.stdout, "%s: %d topics, %d messages, %s of data\n", *out, rep.Topics, rep.Messages, units.FormatSize(int64(rep.Bytes)))
	return exitOK
}
