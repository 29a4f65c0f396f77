package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/pack"
)

var listWhat = []string{"topics", "schemas", "triggers", "metadata", "attachments"}

func init() {
	register(&verb{name: "list", summary: "list a dump's topics, schemas, triggers, metadata or attachments", run: runList, actions: listWhat})
	register(&verb{name: "compress", summary: "re-encode a dump (pack or MCAP) with another compression, losing nothing", run: runCompress})
}

func runList(e *env) int {
	c := newCommand(e, "list", "edr-lite list topics|schemas|triggers|metadata|attachments FILE... [--json]",
		`List one kind of record of each dump (pack or MCAP), one per line, as the
MCAP CLI's "list" does:

  topics    topic, messages, type; for MCAP also the channel id, message
            encoding and schema id ("channels" is the same)
  schemas   MCAP: id, name, encoding and size of each schema (--json: the
            schema bytes in base64); pack dumps store type names only, so
            each type in use is listed with its topics
  triggers  id, time, reason, source (and rule), the window it selected
            ("-3s..+2s", with the pre / post it set as overrides; --json:
            from_ns, to_ns, and pre_ns / post_ns only when set), tag,
            severity: the ids "edr-lite filter --around-trigger" takes
  metadata  name, size and the start of the content (--json: all of it;
            MCAP as key/value pairs, pack as base64, or text when it is)
  attachments  the files stored with the dump (pack attachment sections,
            MCAP Attachment records), in file order: name, media type,
            size, log and create times ("edr-lite cat --attachment NAME"
            writes one out)

With --json, one JSON object per line, with "file" and, beside every time in
nanoseconds, its RFC 3339 form.`,
		"edr-lite list triggers dump.pack\nedr-lite list schemas dump.mcap --json | jq -r .name\nedr-lite list topics dumps/*.pack", 2, -1)
	asJSON := c.fs.Bool("json", false, "one JSON object per line")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	what := args[0]
	if what == "channels" {
		what = "topics"
	}
	known := false
	for _, w := range listWhat {
		known = known || w == what
	}
	if !known {
		return c.usageErr("list %q: want %s", args[0], orList(listWhat))
	}
	rc := exitOK
	c.warnSkippedIn(args[1:])
	for i, p := range args[1:] {
		if what == "attachments" {
			if len(args) > 2 && !*asJSON {
				if i > 0 {
					fmt.Fprintln(e.stdout)
				}
				fmt.Fprintf(e.stdout, "%s:\n", p)
			}
			if err := listAttachments(e, p, *asJSON); err != nil {
				c.fail(err)
				rc = exitFail
			}
			continue
		}
		rows, cols, err := listRows(p, what)
		if err != nil {
			c.fail(err)
			rc = exitFail
			continue
		}
		if *asJSON {
			for _, r := range rows {
				delete(r, "preview") // the text column's clip of the content
				r["file"] = p
				b, _ := json.Marshal(r)
				if b, err = withTimes(b); err != nil {
					return c.fail(err)
				}
				fmt.Fprintf(e.stdout, "%s\n", b)
			}
			continue
		}
		if len(args) > 2 {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			fmt.Fprintf(e.stdout, "%s:\n", p)
		}
		printRows(e.stdout, rows, cols)
	}
	return rc
}

// row is one listed record: its JSON fields; cols name the text columns
// (upper case of the key) and the key they show.
type row = map[string]any

type column struct{ title, key string }

func printRows(w io.Writer, rows []row, cols []column) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "(none)")
		return
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	titles := make([]string, len(cols))
	for i, c := range cols {
		titles[i] = c.title
	}
	fmt.Fprintln(tw, strings.Join(titles, "\t"))
	for _, r := range rows {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = cellText(r, c.key)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
}

func cellText(r row, key string) string {
	v, ok := r[key]
	if !ok || v == nil {
		return "-"
	}
	switch v := v.(type) {
	case string:
		if v == "" {
			return "-"
		}
		return v
	case int64:
		if strings.HasSuffix(key, "_ns") {
			if key == "pre_ns" || key == "post_ns" {
				return fmtDur(v)
			}
			return fmtTime(v)
		}
		return fmt.Sprint(v)
	}
	return fmt.Sprint(v)
}

// listRows reads the records of one kind from the dump at path.
func listRows(path, what string) ([]row, []column, error) {
	src, err := dumpfile.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer src.Close()
	switch what {
	case "topics":
		return topicRows(src), []column{{"TOPIC", "topic"}, {"MESSAGES", "messages"}, {"TYPE", "type"},
			{"CHANNEL", "channel_id"}, {"ENCODING", "encoding"}, {"SCHEMA", "schema_id"}}, nil
	case "schemas":
		if mp := src.MCAP(); mp != nil {
			var rows []row
			for _, s := range mp.Info().Schemas {
				rows = append(rows, row{"id": int64(s.ID), "name": s.Name, "encoding": s.Encoding, "size": int64(len(s.Data)), "data": s.Data})
			}
			seen := map[string]bool{}
			for _, t := range src.DecodedTopics() { // CAN frames decoded by --dbc: no schema record of the file
				if id := t.Type.ID().String(); seen[id] {
					continue
				} else {
					seen[id] = true
				}
				rows = append(rows, row{"name": t.Type.Schema.Name, "encoding": t.Type.Schema.Encoding, "size": int64(len(t.Type.Schema.Data)),
					"data": t.Type.Schema.Data})
			}
			return rows, []column{{"ID", "id"}, {"NAME", "name"}, {"ENCODING", "encoding"}, {"SIZE", "size"}}, nil
		}
		// A pack dump stores each distinct type once (type sections):
		// list them with the topics that use them.
		type entry struct {
			typ    ingest.Type
			topics []string
		}
		byID := map[string]*entry{}
		for _, t := range src.Topics() {
			if t.Type.Schema.Name == "" && t.Type.MessageEncoding == "" {
				continue
			}
			id := t.Type.ID().String()
			if byID[id] == nil {
				byID[id] = &entry{typ: t.Type}
			}
			byID[id].topics = append(byID[id].topics, t.String())
		}
		var rows []row
		for id, e := range byID {
			rows = append(rows, row{"name": e.typ.Schema.Name, "encoding": e.typ.MessageEncoding, "schema_encoding": e.typ.Schema.Encoding,
				"size": int64(len(e.typ.Schema.Data)), "data": e.typ.Schema.Data, "type_id": id, "topics": strings.Join(e.topics, ", ")})
		}
		sort.Slice(rows, func(i, j int) bool {
			a, b := rows[i], rows[j]
			if a["name"].(string) != b["name"].(string) {
				return a["name"].(string) < b["name"].(string)
			}
			return a["type_id"].(string) < b["type_id"].(string)
		})
		return rows, []column{{"NAME", "name"}, {"ENCODING", "encoding"}, {"SCHEMA", "schema_encoding"}, {"SIZE", "size"}, {"TOPICS", "topics"}}, nil
	case "triggers":
		d, _ := src.DumpInfo()
		var rows []row
		for _, t := range d.Triggers {
			rows = append(rows, triggerRow(&t))
		}
		return rows, []column{{"ID", "id"}, {"TIME", "time_ns"}, {"REASON", "reason"}, {"SOURCE", "source"},
			{"WINDOW", "window"}, {"TAG", "tag"}, {"SEVERITY", "severity"}}, nil
	default: // metadata
		return metadataRows(src), []column{{"NAME", "name"}, {"SIZE", "size"}, {"CONTENT", "preview"}}, nil
	}
}

func topicRows(src *dumpfile.Source) []row {
	var rows []row
	if mp := src.MCAP(); mp != nil {
		for _, t := range mp.Topics() {
			r := row{"topic": pack.Topic(t.Name, t.Channel), "messages": int64(t.Messages), "type": t.Type.Schema.Name}
			r["topic"] = strings.TrimSuffix(r["topic"].(string), "#")
			if ci := t.MCAP; ci != nil {
				r["channel_id"], r["encoding"] = int64(ci.ID), ci.MessageEncoding
				if ci.SchemaID != 0 {
					r["schema_id"] = int64(ci.SchemaID)
				}
			}
			rows = append(rows, r)
		}
		for _, t := range src.DecodedTopics() { // CAN frames decoded by --dbc
			rows = append(rows, row{"topic": t.String(), "messages": int64(t.Messages), "type": t.Type.Schema.Name,
				"encoding": t.Type.MessageEncoding})
		}
	} else {
		for _, t := range src.Topics() {
			rows = append(rows, row{"topic": t.String(), "messages": int64(t.Messages), "type": t.Type.Schema.Name,
				"encoding": t.Type.MessageEncoding})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i]["topic"].(string) < rows[j]["topic"].(string) })
	return rows
}

func triggerRow(t *dumpinfo.Trigger) row {
	src := t.Source
	if t.Rule != "" {
		src += ":" + t.Rule
	}
	r := row{"id": int64(t.ID), "time_ns": t.TimeNs, "reason": t.Reason, "source": src, "window": triggerWindow(t)}
	if from, to, _, _, ok := t.Window(); ok {
		r["from_ns"], r["to_ns"] = from, to
	}
	if v, ok := t.Pre(); ok {
		r["pre_ns"] = v
	}
	if v, ok := t.Post(); ok {
		r["post_ns"] = v
	}
	if t.Tag != "" {
		r["tag"] = t.Tag
	}
	if t.Severity != 0 {
		r["severity"] = int64(t.Severity)
	}
	if len(t.Params) > 0 {
		r["params"] = t.Params
	}
	return r
}

// metadataPreview bounds the content a metadata line shows.
const metadataPreview = 60

func metadataRows(src *dumpfile.Source) []row {
	var rows []row
	if mp := src.MCAP(); mp != nil {
		for _, md := range mp.Info().Metadata {
			keys := make([]string, 0, len(md.KV))
			size := 0
			for k, v := range md.KV {
				keys = append(keys, k)
				size += len(k) + len(v)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, k+"="+md.KV[k])
			}
			rows = append(rows, row{"name": md.Name, "size": int64(size), "kv": md.KV, "preview": clip(strings.Join(parts, " "))})
		}
		return rows
	}
	r := src.Pack()
	if r == nil { // a camera file has no metadata
		return rows
	}
	for _, n := range r.MetadataNames() {
		b, _ := r.Metadata(n)
		rw := row{"name": n, "size": int64(len(b))}
		if utf8.Valid(b) {
			rw["text"], rw["preview"] = string(b), clip(string(b))
		} else {
			rw["data"], rw["preview"] = b, fmt.Sprintf("(%s of binary)", units.FormatSize(int64(len(b))))
		}
		rows = append(rows, rw)
	}
	return rows
}

// clip shortens s to one line of metadataPreview runes.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > metadataPreview {
		return string([]rune(s)[:metadataPreview]) + "…"
	}
	return s
}

func runCompress(e *env) int {
	c := newCommand(e, "compress", "edr-lite compress IN -o OUT --compression none|lz4|zstd",
		`Write a copy of the dump IN (pack or MCAP) whose frames or chunks use
another compression, and nothing else changed: a pack dump frame by frame
(messages, times, frame ids, the header's writer and creation time, every
metadata section and the dump information as they were); an MCAP file
record by record (schemas, channels, messages with their sequence numbers
and times, attachments, metadata, in file order, chunked again); a pack
dump's attachments too. As the MCAP CLI's "compress", or "export
--compression" without changing the format: OUT is named for it (.pack,
.mcap), and an output named for the other format is refused ("edr-lite
merge" converts). A damaged file is refused (salvage it with "edr-lite
recover" first). Prints the sizes before and after.`,
		"edr-lite compress dump.pack -o dump.zstd.pack --compression zstd\nedr-lite compress big.mcap -o small.mcap --compression zstd", 1, 1)
	out := c.fs.String("o", "", "output `FILE` (required; must not exist)")
	comp := c.fs.String("compression", "zstd", "the new compression: none, lz4 or zstd")
	c.enum("compression", compressions...)
	sf := declareStampFlags(c)
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	if *out == "" {
		return c.usageErr("-o OUT is required")
	}
	if !slices.Contains(compressions, *comp) {
		return c.usageErr("--compression %q: want %s", *comp, orList(compressions))
	}
	if _, err := os.Stat(*out); err == nil {
		return c.fail(fmt.Errorf("%s exists; refusing to overwrite", *out))
	}
	in, err := dumpfile.ReadInfo(args[0])
	if err != nil {
		return c.fail(err)
	}
	if code, ok := sameFormatName(c, args[0], in.Format, *out); !ok {
		return code
	}
	if in.Damage != nil {
		return c.fail(fmt.Errorf("%s cannot be read as it is (%s): salvage it with edr-lite recover first", args[0], in.Damage))
	}
	stamp, err := sf.stamp(c, args[:1])
	if err != nil {
		return c.fail(err)
	}
	bar := newProgress(e, int64(in.Messages), "compressing", "messages")
	rep, err := dumpfile.CompressStamped(args[0], *out, *comp, stamp, func(n uint64) { bar.set(int64(n)) })
	if err != nil {
		return c.fail(err)
	}
	bar.finish()
	ratio := 0.0
	if rep.InSize > 0 {
		ratio = float64(rep.OutSize) / float64(rep.InSize)
	}
	records := "frames"
	if rep.Format == dumpfile.FormatMCAP {
		records = "chunks"
	}
	fmt.Fprintf(e.stdout, "%s -> %s: %s, %d %s, %d messages, %s -> %s (%.3f)\n", args[0], *out, *comp, rep.Records, records,
		rep.Messages, units.FormatSize(rep.InSize), units.FormatSize(rep.OutSize), ratio)
	return exitOK
}

// sameFormatName refuses, as a usage error, an output named for the other
// dump format than its input's (format): a verb that writes its input's
// format (recover, compress) would write a pack file named .mcap, or the
// reverse.
func sameFormatName(c *command, in, format, out string) (int, bool) {
	ext := strings.ToLower(filepath.Ext(out))
	if format == dumpfile.FormatMCAP && ext == ".pack" || format == dumpfile.FormatPack && ext == ".mcap" {
		return c.usageErr("%s is %s file and %s writes the same format: name the output .%s (then \"edr-lite merge\" converts it)",
			in, map[string]string{dumpfile.FormatMCAP: "an MCAP", dumpfile.FormatPack: "a pack"}[format], c.fs.Name(), format), false
	}
	return 0, true
}

// printAttachments prints info's lines of a dump's attachments (nothing
// when it has none).
func printAttachments(w io.Writer, in *dumpfile.Info) {
	if in.AttachmentCount == 0 {
		return
	}
	fmt.Fprintf(w, "attachments: %d (edr-lite cat --attachment NAME writes one out)\n", in.AttachmentCount)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, a := range in.Attachments {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", a.Name, units.FormatSize(a.Size), orDash(a.MediaType), fmtTime(a.LogNs))
	}
	tw.Flush()
	if more := in.AttachmentCount - len(in.Attachments); more > 0 {
		fmt.Fprintf(w, "  ... and %d more (edr-lite list attachments lists them all)\n", more)
	}
}

// listAttachments prints the attachments of the dump at path, a line each
// as it goes (a dump may hold very many).
func listAttachments(e *env, path string, asJSON bool) error {
	src, err := dumpfile.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	as, err := src.Attachments()
	if err != nil {
		return err
	}
	if asJSON {
		bw := bufio.NewWriter(e.stdout)
		for _, a := range as {
			b, _ := json.Marshal(row{"name": a.Name, "media_type": a.MediaType, "size": a.Size, "log_ns": a.LogNs, "create_ns": a.CreateNs, "file": path})
			if b, err = withTimes(b); err != nil {
				return err
			}
			bw.Write(b)
			bw.WriteByte('\n')
		}
		return bw.Flush()
	}
	if len(as) == 0 {
		fmt.Fprintln(e.stdout, "(none)")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMEDIA TYPE\tSIZE\tLOG TIME\tCREATED")
	for _, a := range as {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", orDash(a.Name), orDash(a.MediaType), a.Size, fmtTime(a.LogNs), fmtTime(a.CreateNs))
	}
	return tw.Flush()
}
