package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/edr-lite/edr-lite/internal/config"
)

// exit codes
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// env is what a verb gets: its arguments and where to write.
type env struct {
	args   []string
	stdout io.Writer
	stderr io.Writer
}

// verb is one sub-command.
type verb struct {
	name    string
	summary string
	run     func(e *env) int
}

var verbs = map[string]*verb{}

func register(v *verb) { verbs[v.name] = v }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "--help", "-help":
		if len(args) > 1 {
			if v, ok := verbs[args[1]]; ok {
				return v.run(&env{args: []string{"--help"}, stdout: stdout, stderr: stderr})
			}
		}
		printUsage(stdout)
		return exitOK
	}
	v, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "edr-lite: unknown verb %q (run \"edr-lite help\")\n", args[0])
		return exitUsage
	}
	return v.run(&env{args: args[1:], stdout: stdout, stderr: stderr})
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `edr-lite — event data recorder ("black box") for robots and vehicles

Usage:
  edr-lite <verb> [flags] [args]

Verbs:
`)
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, verbs[n].summary)
	}
	fmt.Fprint(w, `
Run "edr-lite <verb> --help" for the flags and an example of one verb.
Exit status: 0 success, 1 failure, 2 bad usage.
`)
}

// command describes a verb's flag set and help text.
type command struct {
	fs       *flag.FlagSet
	e        *env
	usage    string // "edr-lite info [--json] FILE..."
	desc     string
	example  string
	minArgs  int
	maxArgs  int // -1 = unlimited
	logFmt   *string
	logLevel *string
}

func newCommand(e *env, name, usage, desc, example string, minArgs, maxArgs int) *command {
	c := &command{fs: flag.NewFlagSet(name, flag.ContinueOnError), e: e, usage: usage, desc: desc,
		example: example, minArgs: minArgs, maxArgs: maxArgs}
	c.fs.SetOutput(e.stderr)
	c.fs.Usage = func() {} // parse prints the help (-h) or a hint (bad flag)
	return c
}

// withLogFlags adds --log-format and --log-level.
func (c *command) withLogFlags() {
	c.logFmt = c.fs.String("log-format", "text", "log format: text or json")
	c.logLevel = c.fs.String("log-level", "info", "log level: debug, info, warn or error")
}

// logger builds the slog logger from the log flags (text on stderr by default).
func (c *command) logger() *slog.Logger {
	lvl := slog.LevelInfo
	if c.logLevel != nil {
		_ = lvl.UnmarshalText([]byte(*c.logLevel))
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if c.logFmt != nil && *c.logFmt == "json" {
		return slog.New(slog.NewJSONHandler(c.e.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(c.e.stderr, opts))
}

func (c *command) printHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage:\n  %s\n\n%s\n", c.usage, strings.TrimSpace(c.desc))
	if c.example != "" {
		fmt.Fprintf(w, "\nExample:\n%s\n", indent(strings.TrimSpace(c.example), "  "))
	}
	has := false
	c.fs.VisitAll(func(*flag.Flag) { has = true })
	if has {
		fmt.Fprintf(w, "\nFlags:\n")
		c.fs.SetOutput(w)
		c.fs.PrintDefaults()
		c.fs.SetOutput(c.e.stderr)
	}
}

func indent(s, pre string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = pre + l
	}
	return strings.Join(lines, "\n")
}

// parse parses flags anywhere among the arguments (so "info FILE --json"
// works) and checks the argument count. ok is false when the verb must
// return code (help printed: 0, bad usage: 2).
func (c *command) parse() (args []string, code int, ok bool) {
	rest := c.e.args
	for {
		if err := c.fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.fs.SetOutput(c.e.stdout)
				c.printHelp(c.e.stdout)
				return nil, exitOK, false
			}
			fmt.Fprintf(c.e.stderr, "Usage:\n  %s\nRun \"edr-lite %s --help\" for more.\n", c.usage, c.fs.Name())
			return nil, exitUsage, false
		}
		rest = c.fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" {
			args = append(args, rest[1:]...)
			break
		}
		args = append(args, rest[0])
		rest = rest[1:]
	}
	if len(args) < c.minArgs || (c.maxArgs >= 0 && len(args) > c.maxArgs) {
		fmt.Fprintf(c.e.stderr, "%s: wrong number of arguments\n", c.fs.Name())
		fmt.Fprintf(c.e.stderr, "Usage:\n  %s\nRun \"edr-lite %s --help\" for more.\n", c.usage, c.fs.Name())
		return nil, exitUsage, false
	}
	return args, exitOK, true
}

// fail prints an error for the verb and returns exitFail.
func (c *command) fail(err error) int {
	fmt.Fprintf(c.e.stderr, "edr-lite %s: %v\n", c.fs.Name(), err)
	return exitFail
}

// failConfig prints a configuration's problems, one per line as
// FILE:LINE: key: what (compiler style, so editors jump to them), then a
// count, and returns exitFail. Other errors go through fail.
func (c *command) failConfig(path string, err error) int {
	var ps config.Errors
	if !errors.As(err, &ps) {
		return c.fail(err)
	}
	for _, p := range ps {
		fmt.Fprintln(c.e.stderr, p.Error())
	}
	n := "problem"
	if len(ps) != 1 {
		n += "s"
	}
	fmt.Fprintf(c.e.stderr, "edr-lite %s: %s: %d %s\n", c.fs.Name(), path, len(ps), n)
	return exitFail
}

// usageErr prints a usage error and returns exitUsage.
func (c *command) usageErr(format string, a ...any) int {
	fmt.Fprintf(c.e.stderr, "edr-lite %s: %s\nRun \"edr-lite %s --help\" for usage.\n", c.fs.Name(), fmt.Sprintf(format, a...), c.fs.Name())
	return exitUsage
}

// isTerminal reports whether w is a character device (for progress bars).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
