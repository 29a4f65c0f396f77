package main

import (
	"errors"
	"fmt"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// skipDamaged is the --skip-damaged flag of cat and export: read past
// damage, say on standard error what was skipped, exit 0. A careful user
// of the rosbag2 and MCAP tools expects a read of a damaged file to stop
// with an error (mcap cat does) and a separate step to salvage it (mcap
// recover); --skip-damaged is that step done on the fly, asked for, so its
// result is not an error, and what it left out is said per file.
type skipDamaged struct {
	c  *command
	on *bool
}

func declareSkipDamaged(c *command) *skipDamaged {
	s := &skipDamaged{c: c}
	c.hint = s.hint
	s.on = c.fs.Bool("skip-damaged", false,
		"read past damage: a damaged pack frame or type section is skipped (its topic read as raw bytes from there), a damaged MCAP file read through a salvaged copy; each file's warning on standard error says what was skipped, and the exit status is 0 (without it, damage stops the read with exit 1)")
	return s
}

// arm makes the readers read past damage when the flag is set; the
// returned func undoes it (verbs run in one process in the tests).
func (s *skipDamaged) arm() (undo func()) {
	if !*s.on {
		return func() {}
	}
	c := s.c
	dumpfile.SetSkipDamaged(func(path, what string) {
		fmt.Fprintf(c.e.stderr, "edr-lite %s: warning: %s: skipped %s\n", c.fs.Name(), path, what)
	})
	return func() { dumpfile.SetSkipDamaged(nil) }
}

// hint adds to the error of a read that damage stopped how to read on.
func (s *skipDamaged) hint(err error) error {
	var ce *pack.CorruptError
	var me *mcap.CorruptError
	damage := errors.As(err, &ce) && !errors.Is(err, pack.ErrShrunk) && !errors.Is(err, pack.ErrBadMagic) &&
		!errors.Is(err, pack.ErrUnsupportedVersion) || errors.As(err, &me)
	if *s.on || !damage {
		return err
	}
	return fmt.Errorf("%w (--skip-damaged reads on past it)", err)
}
