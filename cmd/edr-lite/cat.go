package main

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/schema"
)

func init() {
	register(&verb{name: "cat", summary: "print the messages of a dump, one per line", run: runCat})
}

var errLimit = errors.New("limit reached")

// previewLen is how many payload bytes a preview shows.
const previewLen = 16

// Payload modes of cat (--payload).
var payloadModes = []string{"auto", "base64", "hex", "none"}

// Output formats of cat (--format).
var catFormats = []string{"text", "jsonl", "csv"}

func runCat(e *env) int {
	c := newCommand(e, "cat", "edr-lite cat FILE [--topics G,...] [--exclude G,...] [--from T] [--to T] [--limit N] [--jsonl | --decode | --format csv] [--fields P,...] [--payload MODE]",
		`Print the messages of a dump (pack or MCAP) in file order, one line each:
capture time, topic, size and a hex preview of the payload's first 16 bytes.

With --jsonl, one JSON object per line:
  {"topic","ts","time","gen_ts","gen_time","size","data"}
ts and gen_ts are the capture and producer times in nanoseconds since the
epoch, time and gen_time the same in RFC 3339 (gen_* absent when the producer
time is unknown); data is the payload in base64. On a terminal --jsonl shows
"data_hex", a hex preview, instead of the whole payload (--payload base64
prints it whole; a pipe or file gets it whole by default).

With --decode, one JSON object per line with the message decoded by its
topic's type (protobuf from its descriptor set, JSON as it is, packed
structs by their layout; docs/schemas.md):
  {"topic","ts","time","gen_ts","gen_time","type","data"}
(gen_* as above). A message that does not decode is shown raw ("raw" in base64, or "raw_hex"
as --payload says) with a one-line warning on standard error; a topic
without a schema is shown raw without one.

--fields picks fields by path ("speed", "imu.accel[2]", "header.stamp.sec"):
"data" then holds only those, null where a message lacks one.

--format csv (decodes) prints a header row "time,ts,topic,FIELDS..." and
one row per message that has at least one of --fields (required), for
spreadsheets and plotting tools; a string is written unquoted, an object or
array as JSON, an absent field as an empty cell. A field that no decoded
message has (a typo) is named in a warning; none of them found is an error
naming the fields there are (exit 1).

FILE "-" reads a pack dump from standard input, frame by frame (then --from
and --to must be absolute: the start is not known in advance).

`+selectHelp,
		"edr-lite cat dump.pack --topics 'vehicle/*' --limit 20\nedr-lite cat dump.mcap --decode --topics vehicle/speed --limit 3\nedr-lite cat dump.pack --format csv --fields speed,pedal --topics 'vehicle/*' > signals.csv\nedr-lite cat dump.pack --jsonl --from 2s --to 3s > window.jsonl\nedr-lite cat dump.mcap --exclude 'camera/*' --jsonl | jq -r .time\nssh robot cat /var/lib/edr-lite/dumps/last.pack | edr-lite cat -", 1, 1)
	sf := declareSelectFlags(c)
	limit := c.fs.Int("limit", 0, "stop after `N` messages printed (with --format csv: rows; 0 = no limit)")
	jsonl := c.fs.Bool("jsonl", false, "one JSON object per line (see above); the same as --format jsonl")
	decode := c.fs.Bool("decode", false, "one JSON object per line with the message decoded (see above)")
	format := c.fs.String("format", "text", "output `FORMAT`: text, jsonl or csv (decoded, needs --fields)")
	c.enum("format", catFormats...)
	fieldList := c.fs.String("fields", "", "comma-separated field `PATHS` to print (with --decode or --format csv)")
	payload := c.fs.String("payload", "auto", "payload `MODE`: base64 (whole), hex (preview), none, or auto (base64 in --jsonl to a pipe or file, else hex)")
	c.enum("payload", payloadModes...)
	timeMode := c.fs.String("time", "capture", "`WHICH` time to show (ts/time in --jsonl): capture, producer or event (a topic's event_time field as the dump recorded it); --from/--to select on capture time")
	c.enum("time", catTimes...)
	attachment := c.fs.String("attachment", "", "write the attachment `NAME` (edr-lite list attachments shows them) to standard output, byte for byte, instead of messages")
	skip := declareSkipDamaged(c)
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	if c.set("attachment") {
		return catAttachment(c, args[0], *attachment)
	}
	defer skip.arm()()
	sel, err := sf.parse()
	if err != nil {
		return c.usageErr("%v", err)
	}
	switch *format {
	case "text":
	case "jsonl":
		*jsonl = true
	case "csv":
		*decode = true
	default:
		return c.usageErr("--format %q: want %s", *format, orList(catFormats))
	}
	var fields []schema.Path
	for _, f := range splitList(*fieldList) {
		p, err := schema.ParsePath(f)
		if err != nil {
			return c.usageErr("--fields: %v", err)
		}
		fields = append(fields, p)
	}
	switch {
	case len(fields) > 0 && !*decode:
		return c.usageErr("--fields: needs --decode or --format csv")
	case *format == "csv" && len(fields) == 0:
		return c.usageErr("--format csv: give the columns with --fields")
	case *decode && *jsonl && *format != "jsonl":
		return c.usageErr("--decode and --jsonl: choose one (--decode prints JSON lines)")
	}
	mode := *payload
	switch mode {
	case "auto":
		mode = "hex"
		if (*jsonl || *decode) && !isTerminal(e.stdout) {
			mode = "base64"
		}
	case "base64", "hex", "none":
	default:
		return c.usageErr("--payload %q: want %s", *payload, orList(payloadModes))
	}
	if *limit < 0 {
		return c.usageErr("--limit %d: must not be negative", *limit)
	}
	stdin := args[0] == "-"
	if stdin && sel.NeedsStart() {
		return c.usageErr("--from / --to: with standard input give absolute times (the dump's start is not known in advance)")
	}
	var held filter.Held
	fromNs, toNs, _ := sel.Window(0)
	if !stdin && !sel.All() {
		in, err := dumpfile.ReadInfo(args[0])
		if err != nil {
			return c.fail(err)
		}
		var usage error
		held, fromNs, toNs, usage, err = c.selectIn(sel, in)
		if usage != nil {
			return c.usageErr("%v", usage)
		}
		if err != nil {
			return c.fail(err)
		}
	}
	tm, err := newCatTime(*timeMode, args[0], stdin)
	if err != nil {
		return c.usageErr("%v", err)
	}
	out := bufio.NewWriterSize(e.stdout, 64<<10)
	defer out.Flush()
	walk := dumpfile.Walk
	if !stdin {
		c.warnSkippedIn(args[:1])
	}
	if stdin {
		held = filter.Held{What: "standard input", TimesUnknown: true}
		walk = func(name string, fn func(*dumpfile.Msg) error) error { return dumpfile.WalkFrom(name, os.Stdin, fn) }
	}
	var dec *catDecoder
	if *decode {
		dec = newCatDecoder(e, out, args[0], fields, mode, *format == "csv")
	}
	seen := map[string]bool{} // the topics of standard input, for an empty selection's error
	n, matched := 0, 0        // messages printed (what --limit counts: a CSV row or a line), selected
	err = walk(args[0], func(m *dumpfile.Msg) error {
		if stdin && !seen[m.Topic] {
			seen[m.Topic] = true
			held.Topics = append(held.Topics, m.Topic)
		}
		if m.TimeNs < fromNs || m.TimeNs > toNs || !sel.Match(m.Topic) {
			return nil
		}
		matched++
		m = tm.msg(m)
		printed := true
		switch {
		case dec != nil:
			printed = dec.write(m)
		case *jsonl:
			writeCatJSON(out, m, mode)
		default:
			writeCatText(out, m, mode)
		}
		if printed {
			n++
		}
		if *limit > 0 && n >= *limit {
			return errLimit
		}
		return nil
	})
	if dec != nil {
		if ferr := dec.finish(errors.Is(err, errLimit)); ferr != nil && err == nil {
			err = ferr
		}
	}
	if err != nil && !errors.Is(err, errLimit) {
		out.Flush()
		return c.fail(err)
	}
	if *jsonl && *payload == "auto" && mode == "hex" && n > 0 {
		fmt.Fprintln(e.stderr, "(payloads shown as hex previews on a terminal; --payload base64 prints them whole)")
	}
	if matched == 0 && !sel.All() {
		return c.fail(sel.Empty(held, fromNs, toNs))
	}
	return exitOK
}

// writeCatJSON writes one line of cat --jsonl: topic, ts, time, gen_ts
// and gen_time (when known), size, and data (base64) or data_hex (a preview). A
// payload is encoded straight into the output, never held whole as base64
// or as a JSON line (a 32 MiB message would take hundreds of MB).
func writeCatJSON(out *bufio.Writer, m *dumpfile.Msg, mode string) {
	writeJSONHead(out, m)
	fmt.Fprintf(out, `,"size":%d`, len(m.Data))
	switch {
	case mode == "base64" && len(m.Data) > 0:
		out.WriteString(`,"data":"`)
		writeBase64(out, m.Data)
		out.WriteByte('"')
	case mode == "hex" && len(m.Data) > 0:
		fmt.Fprintf(out, `,"data_hex":"%s"`, hexPreview(m.Data))
	}
	out.WriteString("}\n")
}

// writeCatText writes one line of cat's text output, the payload as a
// hex preview, streamed base64 or nothing.
func writeCatText(out *bufio.Writer, m *dumpfile.Msg, mode string) {
	fmt.Fprintf(out, "%s %-24s %8s", fmtTime(m.TimeNs), m.Topic, units.FormatSize(int64(len(m.Data))))
	switch {
	case mode == "base64" && len(m.Data) > 0:
		out.WriteString("  ")
		writeBase64(out, m.Data)
	case mode == "hex" && len(m.Data) > 0:
		out.WriteString("  " + hexPreview(m.Data))
	}
	out.WriteByte('\n')
}

func writeBase64(out *bufio.Writer, b []byte) {
	enc := base64.NewEncoder(base64.StdEncoding, out)
	enc.Write(b)
	enc.Close()
}

// hexPreview is the hex of a payload's first previewLen bytes, with "…"
// when there is more.
func hexPreview(b []byte) string {
	if len(b) > previewLen {
		return hex.EncodeToString(b[:previewLen]) + "…"
	}
	return hex.EncodeToString(b)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
