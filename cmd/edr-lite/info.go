package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/internal/units"
)

func init() {
	register(&verb{name: "info", summary: "summarise dumps: topics, counts, time range, triggers, losses", run: runInfo})
}

func runInfo(e *env) int {
	c := newCommand(e, "info", "edr-lite info [--json] FILE...",
		`Summarise each dump (pack or MCAP): size, whether it is indexed, time range,
the triggers that caused it (reason, time, source, windows) and, per topic,
messages, bytes, rate and every counted loss (overwritten before it could be
dumped, rejected oversize, skipped while busy).

With --json, one JSON object per file (one per line) with path, format,
messages, bytes, start_ns, end_ns, topics[] {name, messages, bytes, ...} and
triggers[] {reason, time_ns, source, ...}; beside every time in nanoseconds
(X_ns) its RFC 3339 form (X), beside pre_ns / post_ns their duration (500ms).

FILE "-" reads a pack dump from standard input, frame by frame.`,
		"edr-lite info /var/lib/edr-lite/dumps/20261202T101500Z_hard-brake_0001.pack\nedr-lite info --json dumps/*.pack | jq .triggers", 1, -1)
	asJSON := c.fs.Bool("json", false, "print one JSON object per file")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	rc := exitOK
	for i, p := range args {
		var in *dumpfile.Info
		var err error
		if p == "-" {
			in, err = dumpfile.ReadInfoFrom(p, os.Stdin)
		} else {
			in, err = dumpfile.ReadInfo(p)
		}
		if err != nil {
			c.fail(err)
			rc = exitFail
			continue
		}
		if *asJSON {
			b, _ := json.Marshal(in)
			if b, err = withTimes(b); err != nil {
				return c.fail(err)
			}
			fmt.Fprintf(e.stdout, "%s\n", b)
			continue
		}
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		printInfo(e.stdout, in)
	}
	return rc
}

func fmtTime(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000000Z")
}

func fmtDur(ns int64) string {
	return time.Duration(ns).Round(time.Millisecond).String()
}

func printInfo(w io.Writer, in *dumpfile.Info) {
	idx := "indexed"
	switch {
	case in.Indexed:
	case in.Format == dumpfile.FormatMCAP:
		idx = "not indexed (no summary section; read by scanning)"
	default:
		idx = "not indexed (read by scanning; 'edr-lite recover' rebuilds the index)"
	}
	fmt.Fprintf(w, "path:       %s\n", in.Path)
	fmt.Fprintf(w, "format:     %s, %s, %s\n", in.Format, units.FormatSize(in.Size), idx)
	printDamage(w, in)
	if in.Writer != "" {
		fmt.Fprintf(w, "writer:     %s\n", in.Writer)
	}
	if len(in.Compression) > 0 {
		fmt.Fprintf(w, "compress:   %s", strings.Join(in.Compression, ", "))
		if in.RawBytes > 0 {
			fmt.Fprintf(w, " (data %s stored for %s, ratio %.3f)", units.FormatSize(in.StoredBytes), units.FormatSize(in.RawBytes),
				float64(in.StoredBytes)/float64(in.RawBytes))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "messages:   %d (%s of payload)\n", in.Messages, units.FormatSize(int64(in.Bytes)))
	fmt.Fprintf(w, "start:      %s\n", fmtTime(in.StartNs))
	fmt.Fprintf(w, "end:        %s\n", fmtTime(in.EndNs))
	fmt.Fprintf(w, "duration:   %s\n", fmtDur(in.EndNs-in.StartNs))
	printCut(w, in.Cut)
	if len(in.Triggers) == 0 {
		fmt.Fprintf(w, "triggers:   none recorded\n")
	} else {
		fmt.Fprintf(w, "triggers:\n")
		for _, t := range in.Triggers {
			src := t.Source
			if t.Rule != "" {
				src += ":" + t.Rule
			}
			fmt.Fprintf(w, "  %s  %-16s source=%s pre=%s post=%s", fmtTime(t.TimeNs), t.Reason, src, fmtDur(t.PreNs), fmtDur(t.PostNs))
			if t.Tag != "" {
				fmt.Fprintf(w, " tag=%s", t.Tag)
			}
			if t.Severity != 0 {
				fmt.Fprintf(w, " severity=%d", t.Severity)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "topics:     %d\n", len(in.Topics))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "  topic\tmessages\tbytes\trate\tlost\tsrc-lost\toversize\tbusy\ttype\n")
	for _, t := range in.Topics {
		rate := "-"
		if t.Messages > 1 && t.LastNs > t.FirstNs {
			rate = fmt.Sprintf("%.1f Hz", float64(t.Messages-1)/(float64(t.LastNs-t.FirstNs)/1e9))
		}
		typ := t.Type
		if typ == "" {
			typ = "-"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", t.Name, t.Messages, units.FormatSize(int64(t.Bytes)), rate,
			t.Overwritten, t.LostAtSource, t.Oversize, t.SkippedBusy, typ)
	}
	tw.Flush()
}
