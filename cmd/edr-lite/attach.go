package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/edr-lite/edr-lite/dumpfile"
)

// catAttachment writes the attachment called name of the dump at path to
// standard output, byte for byte (cat --attachment). Several attachments of
// that name: the first, with a warning; none: an error listing the names
// the dump has.
func catAttachment(c *command, path, name string) int {
	if path == "-" {
		return c.usageErr("--attachment reads a file, not standard input (a stream keeps no attachment's bytes)")
	}
	var other []string
	c.fs.Visit(func(f *flag.Flag) {
		if f.Name != "attachment" {
			other = append(other, "--"+f.Name)
		}
	})
	if len(other) > 0 {
		return c.usageErr("--attachment writes one attachment's bytes: %s do not apply", strings.Join(other, ", "))
	}
	src, err := dumpfile.Open(path)
	if err != nil {
		return c.fail(err)
	}
	defer src.Close()
	as, err := src.Attachments()
	if err != nil {
		return c.fail(err)
	}
	var names []string
	found := -1
	n := 0
	for i, a := range as {
		names = append(names, fmt.Sprintf("%q", a.Name))
		if a.Name == name {
			if found < 0 {
				found = i
			}
			n++
		}
	}
	if found < 0 {
		have := "it has none"
		if len(names) > 0 {
			have = "it has " + strings.Join(names, ", ")
		}
		return c.fail(fmt.Errorf("%s: no attachment named %q (%s)", path, name, have))
	}
	if n > 1 {
		fmt.Fprintf(c.e.stderr, "edr-lite cat: warning: %s has %d attachments named %q: wrote the first (edr-lite list attachments shows them)\n", path, n, name)
	}
	if _, err := c.e.stdout.Write(as[found].Data); err != nil {
		return c.fail(err)
	}
	return exitOK
}
