//go:build !ecu

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/report"
	"github.com/edr-lite/edr-lite/schema"
)

func init() {
	register(&verb{name: "report", summary: "one self-contained HTML page (or JSON) per dump: triggers, timeline, plots, cameras, timing", run: runReport})
}

func runReport(e *env) int {
	c := newCommand(e, "report", "edr-lite report DUMP... [-o report.html] [--format html|json] [--schema TOPIC=FILE]... [--fields TOPIC[:PATH],...]",
		`Analyse dumps (pack or MCAP, several merged in time order as "merge" does)
and write one HTML page that needs nothing else to be viewed (CSS, SVG plots
and camera thumbnails inline; no script, no network) and prints cleanly:

  - the triggers (reason, source, rule, tag, severity, time, windows);
  - a topic timeline: one lane per topic with its message rate over time,
    gaps, the window the trigger asked for and the one held, losses by
    cause (overwritten, lost at source, oversize, skipped while busy);
  - signal plots of the decoded numeric fields on a shared time axis, with
    the trigger line and the schema's units (long windows are reduced to
    the first, smallest, largest and last sample per pixel column, so
    spikes survive);
  - a camera strip: thumbnails of foxglove.CompressedImage topics (JPEG,
    PNG) and of foxglove.CompressedVideo key frames (decoded with ffmpeg
    when it is installed) at and around the trigger;
  - timing per topic: rate, inter-arrival interval and jitter (p50, p99,
    max), capture - producer latency, out-of-order count, largest gap;
  - the accounting table and the file facts (size, compression, codec
    ratio, indexed, verify result).

A topic is decoded when the dump records its schema (MCAP channels do), or
with --schema TOPIC=LAYOUT_FILE (a packed-struct layout, docs/schemas.md)
or --schema TOPIC=foxglove.CompressedImage / foxglove.CompressedVideo.

Without -o the page is written to DUMP.html in the current directory (the
first dump's name); -o - writes to standard output. --format json prints
the same analysis as one JSON document on one line (field names in
docs/report.md), to standard output unless -o says otherwise.

`+selectHelp+` --from and --to also bound the time axis.`,
		`edr-lite report dump.pack -o brake.html
edr-lite report dump.pack --schema vehicle/speed=speed.layout --schema camera/front=foxglove.CompressedImage
edr-lite report a.pack b.mcap --topics 'vehicle/*' --from 2s --to 4s -o window.html
edr-lite report dump.mcap --format json | jq '.topics[] | {name, rate: .timing.rate_hz}'`, 1, -1)
	out := c.fs.String("o", "", "output file (default: DUMP.html for html, standard output for json; - = standard output)")
	format := c.fs.String("format", "html", "html or json")
	sf := declareSelectFlags(c)
	fields := c.fs.String("fields", "", "comma-separated TOPIC or TOPIC:PATH (a field path such as wheel[2]) to plot; empty = every numeric field; an entry that plots nothing (no such topic or numeric field) is a warning naming what there is")
	var schemas []string
	c.fs.Func("schema", "TOPIC=LAYOUT_FILE, TOPIC=foxglove.CompressedImage or TOPIC=foxglove.CompressedVideo: the topic's type (repeatable)", func(s string) error {
		schemas = append(schemas, s)
		return nil
	})
	noVerify := c.fs.Bool("no-verify", false, "leave out the verification pass of MCAP files (pack files are checked while they are read)")
	thumbs := c.fs.Int("thumbs", report.DefaultThumbs, "thumbnails per camera topic")
	video := c.fs.String("video-decoder", "", `program that decodes video key frames (default: ffmpeg when installed; "none": placeholders)`)
	title := c.fs.String("title", "", "page title (default: the dumps' names)")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	sel, err := sf.parse()
	if err != nil {
		return c.usageErr("%v", err)
	}
	if *format != "html" && *format != "json" {
		return c.usageErr("--format %q: want html or json", *format)
	}
	if *thumbs < 1 || *thumbs > 100 {
		return c.usageErr("--thumbs %d: want 1 to 100", *thumbs)
	}
	for _, a := range args {
		if a == "-" {
			return c.usageErr("standard input is not supported: the report reads the file twice (facts, messages)")
		}
	}
	o := report.DumpOptions{Options: report.Options{Title: *title, Thumbs: *thumbs, Fields: splitList(*fields),
		Schemas: map[string]schema.Type{}}, Topics: sel.Topics.Include, Exclude: sel.Topics.Exclude, Verify: !*noVerify}
	if err := report.ParseFields(o.Fields); err != nil {
		return c.usageErr("%v", err)
	}
	for _, s := range schemas {
		topic, t, err := report.ParseSchemaArg(s)
		if err != nil {
			return c.usageErr("%v", err)
		}
		o.Schemas[topic] = t
	}
	switch *video {
	case "":
		o.VideoDecoder = report.FindVideoDecoder()
	case "none":
	default:
		o.VideoDecoder = *video
	}
	var emptySel func() error // the error of a selection that read nothing
	if !sel.All() {
		infos, err := readInfos(args)
		if err != nil {
			return c.fail(err)
		}
		held, fromNs, toNs, usage, err := c.selectIn(sel, infos...)
		if usage != nil {
			return c.usageErr("%v", usage)
		}
		if err != nil {
			return c.fail(err)
		}
		if fromNs != filter.MinNs {
			o.FromNs = fromNs
		}
		if toNs != filter.MaxNs {
			o.ToNs = toNs
		}
		emptySel = func() error { return sel.Empty(held, fromNs, toNs) }
	}
	if isTerminal(e.stderr) {
		var bar *progressbar.ProgressBar
		o.Progress = func(done, total uint64) {
			if bar == nil {
				bar = progressbar.NewOptions64(int64(max(total, 1)), progressbar.OptionSetWriter(e.stderr),
					progressbar.OptionSetDescription("reading"), progressbar.OptionShowCount(),
					progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
			}
			bar.Set64(int64(done))
		}
		defer func() {
			if bar != nil {
				bar.Finish()
			}
		}()
	}
	c.warnSkippedIn(args)
	r, err := report.FromDumps(args, o)
	if err != nil {
		return c.fail(err)
	}
	c.warnNotes(r.Unmatched) // a --fields entry that plots nothing, a --schema topic not there (a typo): the page says it too
	if emptySel != nil {
		n := uint64(0)
		for _, t := range r.Topics {
			n += t.Messages
		}
		if n == 0 {
			return c.fail(emptySel())
		}
	}
	dest := *out
	if dest == "" {
		if *format == "json" {
			dest = "-"
		} else {
			base := filepath.Base(args[0])
			dest = strings.TrimSuffix(base, filepath.Ext(base)) + ".html"
		}
	}
	write := func(w io.Writer) error {
		if *format == "json" {
			return json.NewEncoder(w).Encode(r) // one line, as info --json
		}
		return report.WriteHTML(w, r, report.HTMLOptions{})
	}
	if dest == "-" {
		bw := bufio.NewWriter(e.stdout)
		if err := write(bw); err != nil {
			return c.fail(err)
		}
		if err := bw.Flush(); err != nil {
			return c.fail(err)
		}
		return exitOK
	}
	if err := writeFileAtomic(dest, write); err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(e.stdout, "report: %s\n", dest)
	return exitOK
}

// writeFileAtomic writes path through a temporary file in its directory,
// renamed into place once complete.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(tmp, 256<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
