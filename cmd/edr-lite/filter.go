package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/internal/filter"
	"github.com/edr-lite/edr-lite/internal/units"
)

func init() {
	register(&verb{name: "filter", summary: "cut a dump by topics, time or trigger into a new pack or MCAP dump", run: runFilter})
	register(&verb{name: "split", summary: "split a dump into files of a duration or size", run: runSplit})
}

var compressions = []string{"none", "lz4", "zstd"}

// writeFlags are the output flags of the verbs that write a dump.
type writeFlags struct {
	out, format, comp *string
}

func declareWriteFlags(c *command, outHelp string) *writeFlags {
	f := &writeFlags{
		out:    c.fs.String("o", "", outHelp),
		format: c.fs.String("format", "", "output `FORMAT`: pack or mcap (default: from the -o extension, .mcap is MCAP, else pack)"),
		comp:   c.fs.String("compression", "none", "compression of the output's frames or chunks: none, lz4 or zstd"),
	}
	c.enum("format", dumpfile.FormatPack, dumpfile.FormatMCAP)
	c.enum("compression", compressions...)
	c.stampf = declareStampFlags(c) // rewrite stamps the output
	return f
}

// options checks the output flags; an error is bad usage.
func (f *writeFlags) options() (format string, err error) {
	if *f.out == "" {
		return "", errors.New("-o OUT is required")
	}
	if !slices.Contains(compressions, *f.comp) {
		return "", fmt.Errorf("--compression %q: want %s", *f.comp, orList(compressions))
	}
	format = *f.format
	switch format {
	case "":
		format = dumpfile.FormatPack
		if strings.EqualFold(filepath.Ext(*f.out), ".mcap") {
			format = dumpfile.FormatMCAP
		}
	case dumpfile.FormatPack, dumpfile.FormatMCAP:
	default:
		return "", fmt.Errorf("--format %q: want pack or mcap", format)
	}
	return format, nil
}

// parseRewrite parses the command line of a verb that rewrites dumps
// (filter, split, merge): its inputs, the output format and the
// selection. A false ok returns the exit code.
func (c *command) parseRewrite(sf *selectFlags, wf *writeFlags) (args []string, format string, sel filter.Selection, code int, ok bool) {
	args, code, ok = c.parse()
	if !ok {
		return nil, "", sel, code, false
	}
	format, err := wf.options()
	if err == nil {
		sel, err = sf.parse()
	}
	if err != nil {
		return nil, "", sel, c.usageErr("%v", err), false
	}
	return args, format, sel, exitOK, true
}

// readInfos summarises every input (for the selection's checks and the
// progress bar's total).
func readInfos(paths []string) ([]*dumpfile.Info, error) {
	var infos []*dumpfile.Info
	for _, p := range paths {
		in, err := dumpfile.ReadInfo(p)
		if err != nil {
			return nil, err
		}
		infos = append(infos, in)
	}
	return infos, nil
}

func totalMessages(infos []*dumpfile.Info) (n uint64) {
	for _, in := range infos {
		n += in.Messages
	}
	return n
}

func runFilter(e *env) int {
	c := newCommand(e, "filter", "edr-lite filter IN... -o OUT [--topics G,...] [--exclude G,...] [--from T] [--to T] [--around-trigger ID [--pre D] [--post D]] [--format pack|mcap] [--compression none|lz4|zstd]",
		`Write the messages of IN (pack or MCAP; several are merged in time order)
that the selection keeps to a new dump OUT, pack or MCAP: a cut, as the MCAP
CLI's "filter" and cyber_recorder's "split" make. The cut keeps the topics'
types (and, from MCAP to MCAP, their encodings, schemas and channel
metadata), the inputs' other metadata and the triggers inside its window.
Its dump information says what it is: a cut of which files, over which
window, with which globs, and what was left out (messages per topic,
topics of which nothing was kept, triggers outside the window); "edr-lite
info OUT" shows it.

--around-trigger ID keeps the window of the input's trigger with that id
("edr-lite list triggers IN" lists them): from its time minus --pre to its
time plus --post, by default the window the trigger selected. It
excludes --from / --to.

`+selectHelp,
		"edr-lite filter dump.pack -o brake.pack --around-trigger 1 --pre 2s --post 1s\nedr-lite filter dump.mcap -o small.mcap --exclude 'camera/*' --compression zstd\nedr-lite filter dump.pack -o window.mcap --from 2026-12-02T10:15:00Z --to 2026-12-02T10:15:05Z", 1, -1)
	sf := declareSelectFlags(c)
	wf := declareWriteFlags(c, "output `FILE` (required; must not exist)")
	around := c.fs.String("around-trigger", "", "keep the window around the trigger with this `ID`")
	pre := c.fs.String("pre", "", "with --around-trigger: history before the trigger to keep (default: the trigger's)")
	post := c.fs.String("post", "", "with --around-trigger: time after the trigger to keep (default: the trigger's)")
	args, format, sel, code, ok := c.parseRewrite(sf, wf)
	if !ok {
		return code
	}
	if *around == "" && (*pre != "" || *post != "") {
		return c.usageErr("--pre / --post go with --around-trigger")
	}
	if *around != "" && (sel.From.Set() || sel.To.Set()) {
		return c.usageErr("--around-trigger excludes --from / --to")
	}
	infos, err := readInfos(args)
	if err != nil {
		return c.fail(err)
	}
	held, fromNs, toNs, usage, err := c.selectIn(sel, infos...)
	if usage != nil {
		return c.usageErr("%v", usage)
	}
	var trigID uint64
	if *around != "" {
		var t *dumpinfo.Trigger
		if t, usage, err = findTrigger(infos, *around); usage != nil {
			return c.usageErr("%v", usage)
		}
		if err == nil {
			trigID = t.ID
			_, _, preNs, postNs, known := t.Window() // the trigger's effective window
			if !known && (*pre == "" || *post == "") {
				return c.usageErr("--around-trigger %d: the dump does not record the trigger's window (an older writer): give --pre and --post", t.ID)
			}
			if *pre != "" {
				d, perr := units.ParseDuration(*pre)
				if perr != nil || d < 0 {
					return c.usageErr("--pre %q: want a duration like 2s", *pre)
				}
				preNs = int64(d)
			}
			if *post != "" {
				d, perr := units.ParseDuration(*post)
				if perr != nil || d < 0 {
					return c.usageErr("--post %q: want a duration like 1s", *post)
				}
				postNs = int64(d)
			}
			fromNs, toNs = t.TimeNs-preNs, t.TimeNs+postNs
			err = sel.Check(held, fromNs, toNs)
		}
	}
	if err != nil {
		return c.fail(err)
	}
	opts := dumpfile.RewriteOptions{Format: format, Compression: *wf.comp, Writer: "edr-lite filter",
		Topics: dumpfile.TopicFilter(sel.Topics), Cut: true, AroundTrigger: trigID}
	if fromNs != filter.MinNs || toNs != filter.MaxNs {
		opts.Window = &dumpfile.Window{FromNs: fromNs, ToNs: toNs}
	}
	rep, err := rewrite(c, args, *wf.out, opts, totalMessages(infos), "filtering")
	if err != nil {
		if errors.Is(err, dumpfile.ErrEmpty) {
			err = sel.Empty(held, fromNs, toNs)
		}
		return c.fail(err)
	}
	for _, p := range rep.Parts {
		printPart(e, rep, &p)
	}
	return exitOK
}

// findTrigger finds the trigger with id spec among the inputs'. A spec
// that is not a number is usage; no such trigger is an error listing
// those there are.
func findTrigger(infos []*dumpfile.Info, spec string) (t *dumpinfo.Trigger, usage, err error) {
	id, perr := strconv.ParseUint(spec, 10, 64)
	if perr != nil {
		return nil, fmt.Errorf("--around-trigger %q: want a trigger id (edr-lite list triggers FILE)", spec), nil
	}
	var have []string
	for _, in := range infos {
		for i := range in.Triggers {
			tr := &in.Triggers[i]
			if tr.ID == id {
				return tr, nil, nil
			}
			have = append(have, fmt.Sprintf("%d (%s at %s)", tr.ID, tr.Reason, fmtTime(tr.TimeNs)))
		}
	}
	if len(have) == 0 {
		return nil, nil, fmt.Errorf("--around-trigger %d: the input holds no trigger", id)
	}
	return nil, nil, fmt.Errorf("--around-trigger %d: no such trigger; the input holds %s", id, strings.Join(have, ", "))
}

// rewrite opens the inputs and runs dumpfile.Rewrite into out with a
// progress bar of the messages read. An MCAP input that is truncated or
// damaged is read through a salvaged copy, with a warning saying what it
// lacks.
func rewrite(c *command, ins []string, out string, opts dumpfile.RewriteOptions, total uint64, desc string) (*dumpfile.RewriteReport, error) {
	e := c.e
	srcs, err := dumpfile.OpenAllSalvaged(ins, func(p string, d *dumpfile.Damage) {
		fmt.Fprintf(e.stderr, "edr-lite %s: warning: %s cannot be read as it is (%s): reading what a salvaged copy holds\n", c.fs.Name(), p, d)
	})
	if err != nil {
		return nil, err
	}
	defer dumpfile.CloseAll(srcs)
	for _, s := range srcs {
		c.warnSkipped(s)
	}
	if c.stampf != nil {
		if opts.Stamp, err = c.stampf.stamp(c, ins); err != nil {
			return nil, err
		}
	}
	bar := newProgress(e, int64(total), desc, "messages")
	opts.Progress = func(n uint64) { bar.set(int64(n)) }
	rep, err := dumpfile.Rewrite(srcs, dumpfile.Output{Path: out}, opts)
	if err == nil {
		bar.finish()
		c.warnNotes(rep.Notes)
	}
	return rep, err
}

// printPart prints what one output of a cut holds and what was left out.
func printPart(e *env, rep *dumpfile.RewriteReport, p *dumpfile.PartReport) {
	fmt.Fprintf(e.stdout, "%s: %d of %d messages, %s of data, %d trigger(s), %s .. %s, %s\n", p.Path, p.Messages, rep.Held,
		units.FormatSize(int64(p.Bytes)), p.Triggers, fmtTime(p.FirstNs), fmtTime(p.LastNs), units.FormatSize(p.Size))
	printLeftOut(e, p)
}

// printLeftOut prints what a cut left out of its inputs.
func printLeftOut(e *env, p *dumpfile.PartReport) {
	var left []string
	if p.CutMessages > 0 {
		left = append(left, fmt.Sprintf("%d messages", p.CutMessages))
	}
	if p.DroppedTopics > 0 {
		left = append(left, fmt.Sprintf("%d topic(s) entirely", p.DroppedTopics))
	}
	if p.DroppedTrigger > 0 {
		left = append(left, fmt.Sprintf("%d trigger(s) outside the window", p.DroppedTrigger))
	}
	if len(left) > 0 {
		fmt.Fprintf(e.stdout, "  left out: %s\n", strings.Join(left, ", "))
	}
}

func runSplit(e *env) int {
	c := newCommand(e, "split", "edr-lite split IN... -o OUT (--duration D | --size S) [--topics G,...] [--exclude G,...] [--from T] [--to T] [--format pack|mcap] [--compression none|lz4|zstd]",
		`Split the messages of IN (pack or MCAP; several are merged in time order)
into consecutive dumps OUT_0001.EXT, OUT_0002.EXT, ... (OUT.EXT given by -o),
each holding --duration of message time (counted from the first message
kept: 0-10s, 10-20s, ...) or about --size bytes (a file ends at the first
frame or chunk past the size). Every file is a cut (see "edr-lite filter"):
its dump information names the inputs, its part number and window, keeps
the triggers inside that window and counts what the other files hold.

`+selectHelp,
		"edr-lite split drive.pack -o part.pack --duration 10s\nedr-lite split drive.mcap -o part.mcap --size 100MiB --exclude 'camera/*'", 1, -1)
	sf := declareSelectFlags(c)
	wf := declareWriteFlags(c, "output `FILE` pattern: OUT.EXT makes OUT_0001.EXT, ... (required)")
	dur := c.fs.String("duration", "", "message time per file (`D`, e.g. 10s)")
	size := c.fs.String("size", "", "bytes per file (`S`, e.g. 100MiB)")
	args, format, sel, code, ok := c.parseRewrite(sf, wf)
	if !ok {
		return code
	}
	var sp dumpfile.Split
	switch {
	case *dur != "" && *size != "":
		return c.usageErr("give --duration or --size, not both")
	case *dur != "":
		d, err := units.ParseDuration(*dur)
		if err != nil || d <= 0 {
			return c.usageErr("--duration %q: want a positive duration like 10s", *dur)
		}
		sp.Every = int64(d)
	case *size != "":
		n, err := units.ParseSize(*size)
		if err != nil || n <= 0 {
			return c.usageErr("--size %q: want a positive size like 100MiB", *size)
		}
		sp.Size = n
	default:
		return c.usageErr("--duration or --size is required")
	}
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
	opts := dumpfile.RewriteOptions{Format: format, Compression: *wf.comp, Writer: "edr-lite split",
		Topics: dumpfile.TopicFilter(sel.Topics), Cut: true, Split: sp}
	if fromNs != filter.MinNs || toNs != filter.MaxNs {
		opts.Window = &dumpfile.Window{FromNs: fromNs, ToNs: toNs}
	}
	rep, err := rewrite(c, args, *wf.out, opts, totalMessages(infos), "splitting")
	if err != nil {
		if errors.Is(err, dumpfile.ErrEmpty) {
			err = sel.Empty(held, fromNs, toNs)
		}
		return c.fail(err)
	}
	for _, p := range rep.Parts {
		printPart(e, rep, &p)
	}
	fmt.Fprintf(e.stdout, "%d file(s), %d messages, %s of data\n", len(rep.Parts), rep.Messages, units.FormatSize(int64(rep.Bytes)))
	return exitOK
}

// printCut prints, in info, what a cut of other dumps holds of them.
func printCut(w io.Writer, c *dumpinfo.Cut) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "cut of:     %s, %s .. %s", strings.Join(c.Of, ", "), fmtTime(c.FromNs), fmtTime(c.ToNs))
	if c.Part > 0 {
		fmt.Fprintf(w, ", part %d", c.Part)
	}
	if c.AroundTrigger != 0 {
		fmt.Fprintf(w, ", around trigger %d", c.AroundTrigger)
	}
	var sel []string
	if len(c.Topics) > 0 {
		sel = append(sel, "--topics "+strings.Join(c.Topics, ","))
	}
	if len(c.Exclude) > 0 {
		sel = append(sel, "--exclude "+strings.Join(c.Exclude, ","))
	}
	if len(sel) > 0 {
		fmt.Fprintf(w, ", %s", strings.Join(sel, " "))
	}
	fmt.Fprintf(w, "\nleft out:   %d messages", c.Messages)
	if len(c.DroppedTopics) > 0 {
		fmt.Fprintf(w, "; all of %s", strings.Join(c.DroppedTopics, ", "))
	}
	if c.DroppedTriggers > 0 {
		fmt.Fprintf(w, "; %d trigger(s) outside the window", c.DroppedTriggers)
	}
	fmt.Fprintln(w)
}

// printDamage prints, in info, where a damaged file could not be read (an
// MCAP file is then read through a salvaged copy, a pack file as far as
// its scan got), and the damaged files of a camera input (a JPEG or an
// MP4 cut short).
func printDamage(w io.Writer, in *dumpfile.Info) {
	for _, d := range in.Damaged {
		fmt.Fprintf(w, "damaged:    %s\n", d)
	}
	if in.Damage == nil {
		return
	}
	fmt.Fprintf(w, "damaged:    %s\n", in.Damage)
	fmt.Fprintf(w, "            the figures below are what can be read; 'edr-lite recover %s -o OUT.%s' saves it\n", in.Path, in.Format)
}
