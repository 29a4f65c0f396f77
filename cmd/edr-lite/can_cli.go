package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/edr-lite/edr-lite/can"
	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

// loadDBC reads and parses a DBC file, its errors in the user's words.
func loadDBC(path string) (*can.DBC, error) {
	d, err := can.LoadDBC(path)
	if err != nil {
		return nil, errors.New(userError(err.Error()))
	}
	return d, nil
}

// decodesCAN are the verbs --dbc does something on (they read messages),
// with what it does there; ls, verify, recover, compress and upload read
// dumps without decoding their messages and have no --dbc.
var decodesCAN = map[string]string{
	"info":   "summarised with their messages, and per frame topic what the DBC made of its frames",
	"cat":    "printed after their frames",
	"list":   "listed",
	"export": "written to the output",
	"import": "written into the dump (candump and ASC inputs)",
	"filter": "written to the output, with per frame topic what the DBC made of its frames",
	"split":  "written to the outputs, with per frame topic what the DBC made of its frames",
	"merge":  "written to the output, with per frame topic what the DBC made of its frames",
	"report": "plotted and counted",
	"rules":  "fed to the rules, as live with the DBC configured",
	"replay": "replayed with the frames",
}

// dbcFlag is --dbc, given once or more: FILE decodes every bus, BUS=FILE
// the bus BUS.
type dbcFlag struct {
	c    *command
	vals []string
}

func (f *dbcFlag) String() string { return strings.Join(f.vals, ",") }

func (f *dbcFlag) Set(v string) error {
	f.vals = append(f.vals, v)
	return nil
}

// declareDBC declares --dbc on a verb that decodes CAN frames.
func declareDBC(c *command, name string) *dbcFlag {
	f := &dbcFlag{c: c}
	c.fs.Var(f, "dbc", "decode the CAN frame topics (can/BUS) by this DBC `FILE`, as the recorder does with a DBC: each frame "+
		"of a DBC message also gives the message on can/BUS/NAME (its signals as fields), "+decodesCAN[name]+
		"; BUS=FILE: bus BUS only (repeatable; docs/can.md)")
	return f
}

// dbcArmed is the decoding a verb set up (parse), for dbcDone.
var dbcArmed struct {
	o    *dumpfile.DBCs
	verb string
	vals []string
}

// arm loads the DBC files and makes the readers decode by them
// (dumpfile.SetDBCs); false with the exit code on a bad value.
func (f *dbcFlag) arm(args []string) (int, bool) {
	if len(f.vals) == 0 {
		return exitOK, true
	}
	c := f.c
	bad := func(format string, a ...any) (int, bool) {
		fmt.Fprintf(c.e.stderr, "%s: --dbc: %s\n", c.fs.Name(), fmt.Sprintf(format, a...))
		return exitUsage, false
	}
	for _, a := range args {
		if a == "-" {
			return bad("standard input is read once, and decoding CAN frames reads a file twice (to list its topics first): give the file's path")
		}
	}
	o := &dumpfile.DBCs{Buses: map[string]*can.DBC{}}
	loaded := map[string]*can.DBC{}
	for _, v := range f.vals {
		bus, path := "", v
		if b, p, ok := strings.Cut(v, "="); ok && !exists(v) {
			bus, path = b, p
			if bus == "" || path == "" {
				return bad("%q: want FILE or BUS=FILE", v)
			}
		}
		d := loaded[path]
		if d == nil {
			var err error
			if d, err = loadDBC(path); err != nil {
				return bad("%v", err)
			}
			loaded[path] = d
		}
		switch {
		case bus == "" && o.All != nil:
			return bad("two DBC files for every bus (%s, %s): give BUS=FILE for each bus", o.All.Name, path)
		case bus == "":
			o.All = d
		case o.Buses[bus] != nil:
			return bad("two DBC files for bus %s", bus)
		default:
			o.Buses[bus] = d
		}
	}
	name := c.fs.Name()
	o.Report = func(path, note string) {
		fmt.Fprintf(c.e.stderr, "edr-lite %s: warning: %s: %s\n", name, path, note)
	}
	dumpfile.SetDBCs(o)
	dbcArmed.o, dbcArmed.verb, dbcArmed.vals = o, name, f.vals
	return exitOK, true
}

func exists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// dbcDone ends the decoding a verb set up: it says what --dbc could not
// decode (no input with a CAN frame topic, a BUS=FILE whose bus no input
// has), unless the verb ended on bad usage, and stops it.
func dbcDone(w io.Writer, code int) {
	o := dbcArmed.o
	if o == nil {
		return
	}
	dumpfile.SetDBCs(nil)
	dbcArmed.o = nil
	missing, found, frames := o.Unfound()
	switch {
	case code == exitUsage:
	case !frames:
		fmt.Fprintf(w, "edr-lite %s: warning: --dbc %s decoded nothing: no input has a CAN frame topic (%s, %s)\n", dbcArmed.verb,
			strings.Join(dbcArmed.vals, " --dbc "), can.FrameTypeName, can.FDFrameTypeName)
	case len(missing) > 0:
		fmt.Fprintf(w, "edr-lite %s: warning: --dbc: no input has the bus %s: not decoded (the inputs' buses: %s)\n", dbcArmed.verb,
			strings.Join(missing, ", "), strings.Join(found, ", "))
	}
}

// printCAN prints what the DBCs made of the frame topics of a dump
// (dumpinfo.CANAccount): when it was recorded, or by --dbc.
func printCAN(w io.Writer, topics []dumpfile.Topic) {
	var any bool
	for _, t := range topics {
		any = any || t.CAN != nil
	}
	if !any {
		return
	}
	fmt.Fprintf(w, "CAN frames by DBC (decoded; unknown: of IDs the DBC lacks; short: fewer bytes than their message):\n")
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, t := range topics {
		a := t.CAN
		if a == nil {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\tdecoded %d\tunknown %d%s\tshort %d%s\n", t.Name, a.DBC, a.Decoded, a.Unknown, idList(a.UnknownIDs, a.Unknown),
			a.Short, idList(a.ShortIDs, a.Short))
	}
	tw.Flush()
}

// idList renders the IDs of n frames as named: " (555, 7FF)".
func idList(ids []string, n uint64) string {
	if len(ids) == 0 {
		return ""
	}
	if len(ids) >= defaults.CANMaxUndecodableIDs && n > uint64(len(ids)) { // perhaps more: only these are named
		return fmt.Sprintf(" (the first %d IDs: %s)", len(ids), strings.Join(ids, ", "))
	}
	return " (" + strings.Join(ids, ", ") + ")"
}
