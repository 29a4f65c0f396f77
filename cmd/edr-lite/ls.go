package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/internal/units"
)

func init() {
	register(&verb{name: "ls", summary: "list the dumps in a directory, and leftover .tmp files", run: runLs})
}

func runLs(e *env) int {
	c := newCommand(e, "ls", "edr-lite ls [DIR]",
		`List the dumps (*.pack, *.mcap) in DIR (default: the current directory),
oldest first, with trigger time, reason, size, duration and message count.
Leftover *.tmp files (a dump interrupted by a crash or power loss) are listed
separately; "edr-lite recover" salvages them.`,
		"edr-lite ls /var/lib/edr-lite/dumps", 0, 1)
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return c.fail(err)
	}
	var dumps, tmps []string
	for _, de := range ents {
		n := de.Name()
		switch {
		case de.IsDir():
		case strings.HasSuffix(n, ".tmp"):
			tmps = append(tmps, n)
		case strings.HasSuffix(n, ".pack"), strings.HasSuffix(n, ".mcap"):
			dumps = append(dumps, n)
		}
	}
	sort.Strings(dumps)
	sort.Strings(tmps)
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "TRIGGER TIME\tREASON\tSIZE\tDURATION\tMESSAGES\tFILE\n")
	rc := exitOK
	var total int64
	for _, n := range dumps {
		p := filepath.Join(dir, n)
		in, err := dumpfile.ReadInfo(p)
		if err != nil {
			fmt.Fprintf(tw, "?\t?\t?\t?\t?\t%s (unreadable: %v)\n", n, err)
			rc = exitFail
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", when, reason, units.FormatSize(in.Size), fmtDur(in.EndNs-in.StartNs), in.Messages, n)
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "%d dumps, %s\n", len(dumps), units.FormatSize(total))
	for _, n := range tmps {
		st, _ := os.Stat(filepath.Join(dir, n))
		var sz int64
		if st != nil {
			sz = st.Size()
		}
		fmt.Fprintf(e.stdout, "leftover: %s (%s) — incomplete dump; salvage with: edr-lite recover %s -o %s\n",
			n, units.FormatSize(sz), filepath.Join(dir, n), strings.TrimSuffix(filepath.Join(dir, n), ".tmp"))
	}
	return rc
}
