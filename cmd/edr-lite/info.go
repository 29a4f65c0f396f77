package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/internal/units"
)

func init() {
	register(&verb{name: "info", summary: "summarise dumps: topics, counts, time range, triggers, losses", run: runInfo})
}

func runInfo(e *env) int {
	c := newCommand(e, "info", "edr-lite info [--json] FILE...",
		`Summarise each dump (pack or MCAP): size, whether it is indexed, the window
asked (start, end) and the window held (first to last message), the triggers
that caused it (reason, time, source, the window each selected, and the pre
or post a trigger set) and, per topic, messages, bytes, rate, the window held
against the window asked and why it is shorter when the recorder knows
(not_recorded: the topic was not recorded yet; overwritten: the ring let
messages of the window go; producer_offline; recorder_stopped), and every
counted loss (overwritten before it could be dumped, lost at the source,
rejected oversize, skipped while busy).

With --json, one JSON object per file (one per line) with path, format,
messages, bytes, start_ns, end_ns (asked), held_start_ns, held_end_ns, topics[]
{name, messages, bytes, first_ns, last_ns, window_from_ns, window_to_ns,
start_short, end_short, ...} and triggers[] {reason, time_ns, source, from_ns,
to_ns, ...}; beside every time in nanoseconds (X_ns) its RFC 3339 form (X),
beside pre_ns / post_ns their duration (500ms).

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
	case in.Format == dumpfile.FormatJPEGDir || in.Format == dumpfile.FormatMP4:
		idx = "camera data (read through)"
	default:
		idx = "not indexed (read by scanning; 'edr-lite recover' rebuilds the index)"
	}
	fmt.Fprintf(w, "path:       %s\n", in.Path)
	fmt.Fprintf(w, "format:     %s, %s, %s\n", in.Format, units.FormatSize(in.Size), idx)
	printDamage(w, in)
	for _, sk := range in.Skipped {
		fmt.Fprintf(w, "skipped:    %s\n", sk)
	}
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
	if from, to, ok := heldSpan(in); ok && (from != in.StartNs || to != in.EndNs) {
		fmt.Fprintf(w, "duration:   %s asked, %s held (%s to %s)\n", fmtDur(in.EndNs-in.StartNs), fmtDur(to-from),
			fmtTime(from), fmtTime(to))
	} else {
		fmt.Fprintf(w, "duration:   %s\n", fmtDur(in.EndNs-in.StartNs))
	}
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
			fmt.Fprintf(w, "  %s  %-16s source=%s window %s", fmtTime(t.TimeNs), t.Reason, src, triggerWindow(&t))
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
	fmt.Fprintf(tw, "  topic\tmessages\tbytes\trate\theld\tlost\tsrc-lost\toversize\tbusy\tencoding\ttype\n")
	for _, t := range in.Topics {
		rate := "-"
		if t.Messages > 1 && t.LastNs > t.FirstNs {
			rate = fmt.Sprintf("%.1f Hz", float64(t.Messages-1)/(float64(t.LastNs-t.FirstNs)/1e9))
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", t.Name, t.Messages, units.FormatSize(int64(t.Bytes)), rate,
			topicHeld(&t), t.Overwritten, t.LostAtSource, t.Oversize, t.SkippedBusy, orDash(t.Encoding), orDash(t.Type))
	}
	tw.Flush()
	printEventOrder(w, in.Topics)
	var changes [][2]string
	for _, t := range in.Topics {
		prevID := t.TypeID
		for _, c := range t.TypeChanges {
			at := "at an unrecorded time"
			if c.AtNs != 0 {
				at = "at " + fmtTime(c.AtNs)
			}
			changes = append(changes, [2]string{t.Name, fmt.Sprintf("%s to %s %s (type %.8s, was %.8s)", at, c.Encoding,
				orDash(c.Type), c.TypeID, prevID)})
			prevID = c.TypeID
		}
	}
	if len(changes) > 0 {
		fmt.Fprintf(w, "type changes (a producer restarted with another type):\n")
		for _, c := range changes {
			fmt.Fprintf(w, "  %s  %s\n", c[0], c[1])
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// heldSpan is the part of the asked window the dump's messages cover:
// first to last message, within [StartNs, EndNs] (keep_last messages from
// before the window do not lengthen it).
func heldSpan(in *dumpfile.Info) (from, to int64, ok bool) {
	if in.HeldEndNs <= in.HeldStartNs && in.Messages == 0 {
		return 0, 0, false
	}
	from, to = in.HeldStartNs, in.HeldEndNs
	if in.StartNs != 0 || in.EndNs != 0 {
		from, to = max(from, in.StartNs), min(to, in.EndNs)
	}
	return from, max(from, to), true
}

// triggerWindow renders the window a trigger selected, relative to its
// time ("-15s..+5s"), with the pre / post it set and, for a trigger
// anchored at the last message, when it was asked. Dumps written before
// the window was recorded show the overrides only.
func triggerWindow(t *dumpinfo.Trigger) string {
	var b strings.Builder
	if t.FromNs != 0 || t.ToNs != 0 {
		fmt.Fprintf(&b, "-%s..+%s", fmtDur(t.TimeNs-t.FromNs), fmtDur(t.ToNs-t.TimeNs))
	} else {
		b.WriteString("of the topics")
	}
	var set []string
	if v, ok := t.Pre(); ok {
		set = append(set, "pre="+fmtDur(v))
	}
	if v, ok := t.Post(); ok {
		set = append(set, "post="+fmtDur(v))
	}
	if len(set) > 0 {
		fmt.Fprintf(&b, " (asked %s)", strings.Join(set, " "))
	}
	if t.At == dumpinfo.AtLast {
		b.WriteString(" at the last message")
		if t.RequestedNs != 0 {
			fmt.Fprintf(&b, " (asked at %s)", fmtTime(t.RequestedNs))
		}
	}
	return b.String()
}

// topicHeld renders the span a topic holds against the window asked, and
// why it is shorter when the dump says: "7.7s of 20s (start: overwritten)".
func topicHeld(t *dumpfile.Topic) string {
	held := "-"
	if t.Messages > 0 {
		held = fmtDur(t.LastNs - t.FirstNs)
	}
	if t.WindowToNs == 0 && t.WindowFromNs == 0 {
		return held
	}
	s := held + " of " + fmtDur(t.WindowToNs-t.WindowFromNs)
	var why []string
	if t.StartShort != "" {
		why = append(why, "start: "+t.StartShort)
	}
	if t.EndShort != "" {
		why = append(why, "end: "+t.EndShort)
	}
	if len(why) > 0 {
		s += " (" + strings.Join(why, ", ") + ")"
	}
	return s
}
