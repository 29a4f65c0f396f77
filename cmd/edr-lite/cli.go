package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/edr-lite/edr-lite/dumpfile"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/suggest"
	"github.com/edr-lite/edr-lite/internal/units"
	"github.com/edr-lite/edr-lite/pack"
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
	// probe, when set, receives the verb's command once its flags are
	// declared, and the verb returns without running (shell completion
	// reads the flags this way: no second list to keep in step).
	probe func(c *command)
	// cleanups run when the verb returns (decrypted copies removed,
	// output flushed: decrypt.go).
	cleanups []func()
}

// finish runs the cleanups, the last registered first.
func (e *env) finish() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	e.cleanups = nil
}

// verb is one sub-command.
type verb struct {
	name    string
	summary string
	run     func(e *env) int
	// actions are the words a verb takes as its first argument ("config
	// init|check"), offered by shell completion.
	actions []string
}

var verbs = map[string]*verb{}

func register(v *verb) { verbs[v.name] = v }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "--version", "-version":
		return runVersion(&env{args: args[1:], stdout: stdout, stderr: stderr})
	case completeVerb:
		return runComplete(args[1:], stdout)
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
		names := make([]string, 0, len(verbs))
		for n := range verbs {
			names = append(names, n)
		}
		fmt.Fprintf(stderr, "edr-lite: unknown verb %q%s (run \"edr-lite help\" for the list)\n", args[0], suggest.DidYouMean(args[0], names))
		return exitUsage
	}
	return runGuarded(v, &env{args: args[1:], stdout: stdout, stderr: stderr})
}

// runGuarded runs v. A dump the verb reads that shrinks under its mapping
// (truncated or re-created by another process) ends it with exit 1 and a
// message naming the file and offset, not with SIGBUS: the readers guard
// their own reads (pack.ErrShrunk), and this guards the verb's use of the
// bytes they handed out. Any other panic goes on, its stack intact.
func runGuarded(v *verb, e *env) (code int) {
	defer e.finish()                           // decrypted copies removed, output flushed (decrypt.go)
	defer func() { dbcDone(e.stderr, code) }() // what --dbc did not decode, said after the verb
	defer func(old bool) {
		debug.SetPanicOnFault(old)
		if x := recover(); x != nil {
			err := pack.FaultError(x)
			if err == nil {
				panic(x)
			}
			fmt.Fprintf(e.stderr, "edr-lite %s: %v\n", v.name, err)
			code = exitFail
		}
	}(debug.SetPanicOnFault(true))
	return v.run(e)
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
Run "edr-lite <verb> --help" for the flags and an example of one verb,
"edr-lite --version" for the build, "edr-lite completion bash|zsh|fish" for
shell completion.
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
	enums    map[string][]string // flag name -> the values completion offers
	maxMem   *string
	// temp maps the path of a temporary file the verb made to the
	// user's name for what it holds, for errors (userText).
	temp map[string]string
	// stampf are the flags of a verb that makes a dump from others
	// (--sign-key, --key), declared with its output flags.
	stampf *stampFlags
	// identities are --identity: age identities to read encrypted dumps
	// with (decrypt.go).
	identities *keysFlag
	hint       func(error) error // adds to a failure what to do about it (--skip-damaged)
	dbc        *dbcFlag          // --dbc, on the verbs that decode CAN frames (decodesCAN)
}

// readsDumps are the verbs that read dump files: each has --max-memory.
var readsDumps = map[string]bool{"info": true, "cat": true, "verify": true, "recover": true, "merge": true,
	"export": true, "import": true, "replay": true, "rules": true, "ls": true, "filter": true, "split": true,
	"compress": true, "list": true, "upload": true, "report": true}

func newCommand(e *env, name, usage, desc, example string, minArgs, maxArgs int) *command {
	c := &command{fs: flag.NewFlagSet(name, flag.ContinueOnError), e: e, usage: usage, desc: desc,
		example: example, minArgs: minArgs, maxArgs: maxArgs}
	c.fs.SetOutput(io.Discard) // parse prints the help (-h) or the error and a hint (bad flag)
	c.fs.Usage = func() {}
	if readsDumps[name] {
		c.maxMem = c.fs.String("max-memory", units.FormatSize(pack.DefaultMaxMemory),
			"the most a reader allocates for one frame or chunk of a dump (a file that needs more is refused as damaged)")
	}
	if readsDumps[name] && !keepsEncrypted[name] {
		c.identities = &keysFlag{}
		c.fs.Var(c.identities, "identity", "an age identity `FILE` (AGE-SECRET-KEY-..., as age-keygen writes it) to read dumps encrypted at rest (.age) with; repeatable")
	}
	if _, ok := decodesCAN[name]; ok {
		c.dbc = declareDBC(c, name)
	}
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
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: userAttr}
	if c.logFmt != nil && *c.logFmt == "json" {
		return slog.New(slog.NewJSONHandler(c.e.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(c.e.stderr, opts))
}

// userAttr words the errors a log line carries for the user (userError),
// whichever key holds them; the message and other values stay.
func userAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindAny {
		if a.Key == "err" && a.Value.Kind() == slog.KindString {
			return slog.String(a.Key, userError(a.Value.String()))
		}
		return a
	}
	if err, ok := a.Value.Any().(error); ok && err != nil {
		return slog.String(a.Key, userError(err.Error()))
	}
	return a
}

func (c *command) printHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage:\n  %s\n\n%s\n", c.usage, strings.TrimSpace(c.desc))
	if c.example != "" {
		fmt.Fprintf(w, "\nExample:\n%s\n", indent(strings.TrimSpace(c.example), "  "))
	}
	c.printFlags(w)
}

// flagSpelling is how help, errors and completion spell a flag: "-o" for
// a one-letter name, "--from" for the others (the usage lines' spelling;
// the flag package accepts both).
func flagSpelling(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagArg names a flag's value in help: the `NAME` quoted in its usage,
// else a placeholder by type; "" for a boolean.
func flagArg(f *flag.Flag) (arg, usage string) {
	arg, usage = flag.UnquoteUsage(f)
	switch arg {
	case "":
		return "", usage
	case "int", "uint", "int64", "uint64":
		arg = "N"
	case "float":
		arg = "F"
	case "duration":
		arg = "D"
	case "string", "value":
		arg = "VALUE"
	}
	return arg, usage
}

// printFlags lists the flags in two columns, spelled as in the usage line
// ("--from T"), each with its default when that is not the zero value.
func (c *command) printFlags(w io.Writer) {
	type row struct{ left, usage string }
	var rows []row
	width := 0
	c.fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flagArg(f)
		left := flagSpelling(f.Name)
		if arg != "" {
			left += " " + arg
		}
		switch f.DefValue {
		case "", "0", "false", "0s", "[]":
		default:
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		rows = append(rows, row{left, usage})
		width = max(width, len(left))
	})
	if len(rows) == 0 {
		return
	}
	width = min(width, 24)
	fmt.Fprintf(w, "\nFlags:\n")
	for _, r := range rows {
		pad := strings.Repeat(" ", width+4)
		if len(r.left) > width {
			fmt.Fprintf(w, "  %s\n%s%s\n", r.left, pad, strings.ReplaceAll(r.usage, "\n", "\n"+pad))
			continue
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, r.left, strings.ReplaceAll(r.usage, "\n", "\n"+pad))
	}
}

// flagErrName matches a flag name in the flag package's errors ("flag
// provided but not defined: -from").
var flagErrName = regexp.MustCompile(`(^|[ :])-([A-Za-z0-9][A-Za-z0-9-]+)`)

// flagHint is the "did you mean" of an undefined flag: the verb's flags
// close to it.
func (c *command) flagHint(err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return ""
	}
	var names []string
	c.fs.VisitAll(func(f *flag.Flag) { names = append(names, flagSpelling(f.Name)) })
	return suggest.DidYouMean(name, names)
}

// flagError spells the flag package's error with the usage line's dashes.
func flagError(err error) string {
	return flagErrName.ReplaceAllString(err.Error(), "$1--$2")
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
	if c.e.probe != nil {
		c.e.probe(c)
		return nil, exitOK, false
	}
	rest := c.e.args
	for {
		if err := c.fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.printHelp(c.e.stdout)
				return nil, exitOK, false
			}
			fmt.Fprintf(c.e.stderr, "edr-lite %s: %s%s\n", c.fs.Name(), flagError(err), c.flagHint(err))
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
	if c.maxMem != nil {
		n, err := units.ParseSize(*c.maxMem)
		if err != nil || n <= 0 {
			fmt.Fprintf(c.e.stderr, "%s: --max-memory %q: want a size such as 256MiB\n", c.fs.Name(), *c.maxMem)
			return nil, exitUsage, false
		}
		dumpfile.SetMaxMemory(n)
		if os.Getenv("GOMEMLIMIT") == "" {
			// The Go heap's soft limit at 5/8 of the readers' bound: the
			// collector runs sooner as the heap nears it, so a verb whose
			// live heap is well under the bound does not peak at twice
			// that with garbage (a merge of 200 k MCAP metadata records:
			// 113 MB live, 265 MiB peak RSS without it, 188 MiB with it;
			// TestHostileInputs). Soft: a larger live heap still gets
			// memory. GOMEMLIMIT, when set, is the user's.
			debug.SetMemoryLimit(n / 8 * 5)
		}
	}
	if len(args) < c.minArgs || (c.maxArgs >= 0 && len(args) > c.maxArgs) {
		fmt.Fprintf(c.e.stderr, "%s: wrong number of arguments\n", c.fs.Name())
		fmt.Fprintf(c.e.stderr, "Usage:\n  %s\nRun \"edr-lite %s --help\" for more.\n", c.usage, c.fs.Name())
		return nil, exitUsage, false
	}
	if code, ok := c.distinctInputs(args); !ok {
		return nil, code, false
	}
	if args, code = c.decryptArgs(args); code != exitOK {
		return nil, code, false
	}
	if c.dbc != nil {
		if code, ok := c.dbc.arm(args); !ok {
			return nil, code, false
		}
	}
	return args, exitOK, true
}

// mergesInputs are the verbs that read their inputs as one stream of
// messages (or one set of tables): an input given twice would be read
// twice, its messages and triggers doubled.
var mergesInputs = map[string]bool{"merge": true, "filter": true, "split": true, "replay": true, "export": true, "report": true, "rules": true}

// distinctInputs refuses, as a usage error, the same file given twice to
// a verb that merges its inputs (by identity: a link or another spelling
// of the path is the same file).
func (c *command) distinctInputs(args []string) (int, bool) {
	if !mergesInputs[c.fs.Name()] {
		return exitOK, true
	}
	seen := make([]os.FileInfo, len(args))
	for i, a := range args {
		st, err := os.Stat(a)
		if a == "-" || err != nil { // a missing file is the verb's to report
			continue
		}
		for j := range i {
			if seen[j] != nil && os.SameFile(seen[j], st) {
				same := ""
				if args[j] != a {
					same = fmt.Sprintf(" (as %s and %s)", args[j], a)
				}
				return c.usageErr("%s is given twice%s: its messages would be read twice", a, same), false
			}
		}
		seen[i] = st
	}
	return exitOK, true
}

// fail prints an error for the verb and returns exitFail.
func (c *command) fail(err error) int {
	if c.hint != nil {
		err = c.hint(err)
	}
	fmt.Fprintf(c.e.stderr, "edr-lite %s: %s\n", c.fs.Name(), c.userText(err.Error()))
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
		fmt.Fprintln(c.e.stderr, c.problemLine(p, ""))
	}
	n := "problem"
	if len(ps) != 1 {
		n += "s"
	}
	fmt.Fprintf(c.e.stderr, "edr-lite %s: %s: %d %s\n", c.fs.Name(), path, len(ps), n)
	return exitFail
}

// userText is userError keeping the verb's arguments as given; a
// temporary file the verb made is named as the user's own (c.temp).
func (c *command) userText(s string) string {
	for tmp, user := range c.temp {
		s = strings.ReplaceAll(s, tmp, user)
	}
	return userError(s, c.keptArgs()...)
}

// keptArgs are the verb's arguments a message names as the user gave
// them: all but the values of choice flags (in "--format jsonl", jsonl is
// a format, not a file whose name a "jsonl: " prefix would be).
func (c *command) keptArgs() []string {
	choice := map[string]bool{}
	for name, vals := range c.enums {
		if f := c.fs.Lookup(name); f != nil && slices.Contains(vals, f.Value.String()) {
			choice[f.Value.String()] = true
		}
	}
	var keep []string
	for _, a := range c.e.args {
		if !choice[a] {
			keep = append(keep, a)
		}
	}
	return keep
}

// problemLine prints a configuration problem as FILE:LINE: key: what
// (with note, e.g. "warning: ", before what), its text worded for the user
// (a key such as "control" is not a package prefix).
func (c *command) problemLine(p *config.Problem, note string) string {
	q := *p
	q.Msg = note + c.userText(p.Msg)
	return q.Error()
}

// usageErr prints a usage error and returns exitUsage. A message that
// refuses a value against a list of choices ("--at \"lst\": want now or
// last") gets the "did you mean" of the choices close to it.
func (c *command) usageErr(format string, a ...any) int {
	msg := c.userText(fmt.Sprintf(format, a...))
	fmt.Fprintf(c.e.stderr, "edr-lite %s: %s%s\nRun \"edr-lite %s --help\" for usage.\n", c.fs.Name(),
		msg, choiceHint(msg), c.fs.Name())
	return exitUsage
}

// reChoices finds a refused value and the choices offered for it in a
// usage error: `"VALUE": want A, B or C` or `"VALUE" (want A or B)`.
var reChoices = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"[:)]? \(?want ([^()]*?)\)?$`)

// choiceHint is the "did you mean" of a usage error that offers choices
// (one-word ones: "a duration like 10s" offers none).
func choiceHint(msg string) string {
	m := reChoices.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	var choices []string
	for _, part := range strings.Split(strings.ReplaceAll(m[2], " or ", ", "), ", ") {
		if part = strings.TrimSpace(part); part != "" && !strings.ContainsAny(part, " =") {
			choices = append(choices, part)
		}
	}
	return suggest.DidYouMean(m[1], choices)
}

// internalPackages are the packages under internal/ whose error prefixes
// ("dumpfile: ", "units: ") name code, not anything a user can act on:
// userError removes them. TestInternalPrefixesListed keeps the list in
// step with the directory.
var internalPackages = []string{"checkpayload", "clock", "config", "control", "daemon", "defaults", "demo", "demodump", "deptest",
	"dumptable", "durable", "filter", "hostile", "kway", "s3test", "suggest", "testutil", "units"}

// roomPackages are the public packages whose error prefixes ("scripts: ",
// "dump: ") name code, not anything a user knows: userError removes them
// too. pack and mcap stay: they name the file format at fault.
// TestRoomPrefixesListed keeps the list in step with the repository.
var roomPackages = []string{"arena", "can", "capture", "dump", "dumpfile", "dumpinfo", "engine", "evidence", "feedcheck", "ingest", "jsonl", "live", "media", "replay", "report",
	"schema", "scripts", "shm", "step", "table", "upload"}

var internalPrefix = regexp.MustCompile(`(^|: )(?:` + strings.Join(append(append([]string(nil), internalPackages...), roomPackages...), "|") + `): `)

// userError removes the packages' prefixes from an error text, wherever
// the wrapping put them ("a.pack: dumpfile: not a pack or MCAP file"
// becomes "a.pack: not a pack or MCAP file", "scripts: syntax error: ..."
// "syntax error: ..."), but never a text the user gave (keep: the verb's
// arguments, so a file named "dump" keeps its name in "dump: ..."). The
// prefixes of pack: and mcap: stay: they say which format is at fault.
func userError(s string, keep ...string) string {
	var held []string
	for _, k := range keep {
		if k == "" || !strings.Contains(s, k+": ") {
			continue
		}
		ph := "\x00" + strconv.Itoa(len(held)) + "\x00"
		held = append(held, k)
		s = strings.ReplaceAll(s, k+": ", ph+": ")
	}
	for {
		t := internalPrefix.ReplaceAllString(s, "$1")
		if t == s {
			break
		}
		s = t
	}
	for i, k := range held {
		s = strings.ReplaceAll(s, "\x00"+strconv.Itoa(i)+"\x00", k)
	}
	return s
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
