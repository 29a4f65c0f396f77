package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/upload"
)

func init() {
	register(&verb{name: "ls", summary: "list the dumps in a directory, and leftovers of interrupted dumps", run: runLs})
}

func runLs(e *env) int {
	c := newCommand(e, "ls", "edr-lite ls [DIR]",
		`List the dumps (*.pack, *.mcap) in DIR (default: the current directory),
oldest first, with trigger time, reason, size, the window held (first to last
message; "of" the window asked when shorter) and message count.
Leftover *.tmp files (a dump interrupted by a crash or power loss; a restarted
recorder renames them *.interrupted, and removes empty ones) are listed
separately; "edr-lite recover" salvages them. When the directory has an upload
queue ([upload] in the recorder's configuration), an UPLOAD column says what it
holds of each dump: queued, uploading, failed (with the last error below the
table), uploaded, or - (unknown to the queue yet).`,
		"edr-lite ls /var/lib/edr-lite/dumps", 0, 1)
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	l, err := dump.OpenDir(dir).List()
	if err != nil {
		return c.fail(err)
	}
	up, hasUp, upErr := upload.ReadState(dir)
	col := func(name string) string { // the UPLOAD column, when there is a queue
		if !hasUp {
			return ""
		}
		if s, ok := up[name]; ok {
			return s.State + "\t"
		}
		return "-\t"
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "TRIGGER TIME\tREASON\tSIZE\tHELD\tMESSAGES\t%sFILE\n", map[bool]string{true: "UPLOAD\t"}[hasUp])
	rc := exitOK
	var total int64
	for _, f := range l.Dumps {
		n := f.Name
		in, err := dumpfile.ReadInfo(f.Path)
		if err != nil {
			why := strings.TrimPrefix(c.userText(err.Error()), f.Path+": ")
			fmt.Fprintf(tw, "?\t?\t?\t?\t?\t%s%s (unreadable: %s)\n", col(n), n, why)
			rc = c.fail(err)
			continue
		}
		total += in.Size
		when, reason := "-", "-"
		if len(in.Triggers) > 0 {
			when = fmtTime(in.Triggers[0].TimeNs)
			rs := make([]string, 0, len(in.Triggers))
			for _, t := range in.Triggers {
				rs = append(rs, t.Reason)
			}
			reason = strings.Join(rs, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s%s\n", when, reason, units.FormatSize(in.Size), heldOf(in), in.Messages, col(n), n)
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "%d dumps, %s\n", len(l.Dumps), units.FormatSize(total))
	if hasUp {
		for _, f := range l.Dumps {
			if s := up[f.Name]; s.LastError != "" {
				fmt.Fprintf(e.stdout, "upload of %s failed %d time(s): %s\n", f.Name, s.Attempts, c.userText(s.LastError))
			}
		}
		if upErr != nil {
			fmt.Fprintf(e.stdout, "upload queue unreadable: %s\n", c.userText(upErr.Error()))
		}
	}
	for _, f := range l.Leftovers {
		fmt.Fprintf(e.stdout, "leftover: %s (%s) — incomplete dump; salvage with: edr-lite recover %s -o %s\n",
			f.Name, units.FormatSize(f.Size), f.Path, dump.LeftoverName(f.Path))
	}
	return rc
}

// heldOf renders the window a dump holds (first to last message, within
// the window asked), "of" the window asked when that is longer: "7.7s of
// 20s".
func heldOf(in *dumpfile.Info) string {
	asked := in.EndNs - in.StartNs
	from, to, ok := heldSpan(in)
	if !ok {
		return "0s of " + fmtDur(asked)
	}
	if held := fmtDur(to - from); held != fmtDur(asked) {
		return held + " of " + fmtDur(asked)
	}
	return fmtDur(asked)
}
