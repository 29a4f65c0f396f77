package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/evidence"
	"github.com/edr-lite/edr-lite/evidence/crypt"
	"github.com/edr-lite/edr-lite/internal/units"
)

func init() {
	register(&verb{name: "info", summary: "summarise dumps: topics, counts, time range, triggers, losses", run: runInfo})
}

func runInfo(e *env) int {
	c := newCommand(e, "info", "edr-lite info [--json] [--key PUB]... FILE...",
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
to_ns (the window the trigger selected), pre_ns / post_ns (only when the
trigger set them: overrides of the topics' windows), ...}; beside every time
in nanoseconds (X_ns) its RFC 3339 form (X), beside pre_ns / post_ns their
duration (500ms).

A dump that holds several separate windows (a merge of dumps, distant
triggers) gets per-window figures: the windows (the triggers' windows, those
that overlap joined) and the gaps between them, and each topic's rate and
held span within the windows, the gaps left out ("14.985s of 15s in 3
windows"); --json adds windows[] {from_ns, to_ns, triggers (indexes into
triggers[]), messages, topics[] {name, messages, first_ns, last_ns,
rate_hz}}. These are read from the messages.

A damaged file (cut short, a damaged record) is summarised as far as it can
be read, with where the damage is and what could not be read; info then
exits 1, as verify does.

The signature line says whether the dump is signed (docs/evidence.md):
"signed by KEY-ID, valid" when its bytes are those signed and the
signature checks out with a public key given with --key; "invalid" with
the reason (a changed byte, a cut or extended file, a seal of another
file); "not checked" without --key (the digest matched); "unsigned". A
signed dump is read whole to check it. --json adds signature {status,
key_id, reason, digest, seal, chain, counter, prev}.

FILE "-" reads a pack dump from standard input, frame by frame (its
signature is not checked).`,
		"edr-lite info /var/lib/edr-lite/dumps/20261202T101500Z_hard-brake_0001.pack\nedr-lite info --json dumps/*.pack | jq .triggers", 1, -1)
	asJSON := c.fs.Bool("json", false, "print one JSON object per file")
	keyFiles := declareKeyFlag(c)
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	keys, err := keyFiles.load()
	if err != nil {
		return c.fail(err)
	}
	rc := exitOK
	for i, p := range args {
		if p != "-" && crypt.IsEncrypted(p) { // no --identity (else decryptArgs gave a copy)
			infoEncrypted(c, p, *asJSON)
			rc = exitFail
			continue
		}
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
		var ws []infoWindow
		if p != "-" && in.Damage == nil {
			if ws = dumpWindows(in); ws != nil {
				if err := fillWindows(p, in, ws); err != nil {
					c.fail(err)
					rc = exitFail
					continue
				}
			}
		}
		if in.Damage != nil {
			// as verify does: what follows is partial, and the exit says so
			fmt.Fprintf(e.stderr, "edr-lite info: %s is damaged: %s\n", p, in.Damage)
			rc = exitFail
		}
		var prov *dumpinfo.Provenance
		sig := &evidence.Verdict{Status: evidence.NotChecked, Reason: "read from standard input: the signature is checked on a file (info FILE, verify --key)"}
		if in.Format != dumpfile.FormatPack && in.Format != dumpfile.FormatMCAP {
			sig = nil // camera files carry none
		} else if p != "-" {
			v, err := dumpfile.CheckSeal(p, keys)
			if err != nil {
				c.fail(err)
				rc = exitFail
				continue
			}
			sig = &v
			if in.Damage == nil {
				if prov, err = dumpfile.ReadProvenance(p); err != nil {
					c.fail(err)
					rc = exitFail
				}
			}
		}
		if *asJSON {
			out := infoJSONOut{Info: in, Windows: ws, Provenance: prov}
			if sig != nil {
				out.Signature = newSignatureJSON(*sig)
			}
			b, _ := json.Marshal(out)
			if b, err = withTimes(b); err != nil {
				return c.fail(err)
			}
			fmt.Fprintf(e.stdout, "%s\n", b)
			continue
		}
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		printInfo(e.stdout, in, ws, sig, prov)
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

// printInfo prints a dump's summary; ws are its separate windows, when it
// holds several (dumpWindows): rates and held spans are then per window.
// sig is its signature's verdict (nil: a format that carries none).
// prov is what it was made from (nil: a recorder's dump).
func printInfo(w io.Writer, in *dumpfile.Info, ws []infoWindow, sig *evidence.Verdict, prov *dumpinfo.Provenance) {
	idx := "indexed"
	switch {
	case in.Indexed:
	case in.Format == dumpfile.FormatMCAP:
		idx = "not indexed (no summary section; read by scanning)"
	case in.Format == dumpfile.FormatJPEGDir || in.Format == dumpfile.FormatMP4:
		idx = "camera data (read through)"
	case in.Format == dumpfile.FormatCandump || in.Format == dumpfile.FormatASC:
		idx = "a CAN log (read through; import makes it a dump)"
	default:
		idx = "not indexed (read by scanning; 'edr-lite recover' rebuilds the index)"
	}
	fmt.Fprintf(w, "path:       %s\n", in.Path)
	fmt.Fprintf(w, "format:     %s, %s, %s\n", in.Format, units.FormatSize(in.Size), idx)
	if sig != nil {
		fmt.Fprintf(w, "signature:  %s\n", signatureText(*sig))
	}
	if prov != nil {
		fmt.Fprintf(w, "provenance: %s\n", provenanceText(prov))
	}
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
	if ws != nil {
		var inside int64
		for _, x := range ws {
			inside += x.ToNs - x.FromNs
		}
		fmt.Fprintf(w, "duration:   %s from the first window to the last; %s in %d windows (figures below are per window)\n",
			fmtDur(in.EndNs-in.StartNs), fmtDur(inside), len(ws))
	} else if from, to, ok := heldSpan(in); ok && (from != in.StartNs || to != in.EndNs) {
		fmt.Fprintf(w, "duration:   %s asked, %s held (%s to %s)\n", fmtDur(in.EndNs-in.StartNs), fmtDur(to-from),
			fmtTime(from), fmtTime(to))
	} else {
		fmt.Fprintf(w, "duration:   %s\n", fmtDur(in.EndNs-in.StartNs))
	}
	printCut(w, in.Cut)
	if len(in.Triggers) == 0 && in.Damage != nil {
		fmt.Fprintf(w, "triggers:   none readable (the dump information is not in the part that can be read)\n")
	} else if len(in.Triggers) == 0 {
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
	if ws != nil {
		printWindows(w, in, ws)
	}
	fmt.Fprintf(w, "topics:     %d\n", len(in.Topics))
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "  topic\tmessages\tbytes\trate\theld\tlost\tsrc-lost\toversize\tbusy\tencoding\ttype\n")
	for i, t := range in.Topics {
		rate, held := "-", topicHeld(&t)
		if t.Messages > 1 && t.LastNs > t.FirstNs {
			rate = fmt.Sprintf("%.1f Hz", float64(t.Messages-1)/(float64(t.LastNs-t.FirstNs)/1e9))
		}
		if ws != nil {
			rate, held = windowsRate(ws, i), windowsHeld(ws, i, t.Messages)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", t.Name, t.Messages, units.FormatSize(int64(t.Bytes)), rate,
			held, t.Overwritten, t.LostAtSource, t.Oversize, t.SkippedBusy, orDash(t.Encoding), orDash(t.Type))
	}
	tw.Flush()
	printEventOrder(w, in.Topics)
	printCAN(w, in.Topics)
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
	printAttachments(w, in)
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

// triggerWindow renders the window a trigger selected (its effective
// window, dumpinfo.Trigger.Window), relative to its time ("-15s..+5s"),
// with the pre / post it set as overrides and, for a trigger anchored at
// the last message, when it was asked. A dump of an older writer that
// recorded no window says so.
func triggerWindow(t *dumpinfo.Trigger) string {
	var b strings.Builder
	if _, _, pre, post, ok := t.Window(); ok {
		fmt.Fprintf(&b, "-%s..+%s", fmtDur(pre), fmtDur(post))
	} else {
		b.WriteString("not recorded (the topics' own)")
	}
	var set []string
	if v, ok := t.Pre(); ok {
		set = append(set, "pre="+fmtDur(v))
	}
	if v, ok := t.Post(); ok {
		set = append(set, "post="+fmtDur(v))
	}
	if len(set) > 0 {
		fmt.Fprintf(&b, " (override %s)", strings.Join(set, " "))
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
