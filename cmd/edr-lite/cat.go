package main

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/internal/units"
)

func init() {
	register(&verb{name: "cat", summary: "print the messages of a dump, one per line", run: runCat})
}

var errLimit = errors.New("limit reached")

func runCat(e *env) int {
	c := newCommand(e, "cat", "edr-lite cat FILE [--topics G,...] [--from T] [--to T] [--limit N] [--jsonl]",
		`Print the messages of a dump (pack or MCAP) in file order, one line each:
capture time, topic, size and a hex preview of the payload. With --jsonl, one
JSON object per line: {"topic","ts","gen_ts","size","data"} with the payload in
base64. FILE "-" reads a pack dump from standard input, frame by frame.

Times for --from / --to: nanoseconds since the epoch, RFC 3339
(2026-12-02T10:15:00.5Z), or an offset from the dump's start ("2.5s"; not
with standard input, whose start is not known in advance).`,
		"edr-lite cat dump.pack --topics 'vehicle/*' --limit 20\nedr-lite cat dump.pack --jsonl --from 2s --to 3s > window.jsonl\nssh robot cat /var/lib/edr-lite/dumps/last.pack | edr-lite cat -", 1, 1)
	topics := c.fs.String("topics", "", "comma-separated topic globs (path.Match syntax); empty = all")
	from := c.fs.String("from", "", "first time to print (see above)")
	to := c.fs.String("to", "", "last time to print (see above)")
	limit := c.fs.Int("limit", 0, "stop after N messages (0 = no limit)")
	jsonl := c.fs.Bool("jsonl", false, "one JSON object per line, payload in base64")
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	globs := splitList(*topics)
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return c.usageErr("bad topic glob %q: %v", g, err)
		}
	}
	var start int64
	stdin := args[0] == "-"
	if stdin && (isOffset(*from) || isOffset(*to)) {
		return c.usageErr("--from / --to: with standard input give absolute times (the dump's start is not known in advance)")
	}
	if !stdin && (*from != "" || *to != "") {
		in, err := dumpfile.ReadInfo(args[0])
		if err != nil {
			return c.fail(err)
		}
		start = in.StartNs
	}
	fromNs, err := parseTimeArg(*from, start, 0)
	if err != nil {
		return c.usageErr("--from: %v", err)
	}
	toNs, err := parseTimeArg(*to, start, int64(^uint64(0)>>1))
	if err != nil {
		return c.usageErr("--to: %v", err)
	}
	n := 0
	out := bufio.NewWriterSize(e.stdout, 64<<10)
	defer out.Flush()
	walk := dumpfile.Walk
	if stdin {
		walk = func(name string, fn func(*dumpfile.Msg) error) error { return dumpfile.WalkFrom(name, os.Stdin, fn) }
	}
	err = walk(args[0], func(m *dumpfile.Msg) error {
		if m.TimeNs < fromNs || m.TimeNs > toNs || !matchAny(globs, m.Topic) {
			return nil
		}
		if *jsonl {
			// Streamed: a large payload is encoded straight into the
			// output, never held whole as base64 or as a JSON line.
			topic, _ := json.Marshal(m.Topic)
			fmt.Fprintf(out, `{"topic":%s,"ts":%d,"gen_ts":%d,"size":%d,"data":"`, topic, m.TimeNs, m.GenNs, len(m.Data))
			enc := base64.NewEncoder(base64.StdEncoding, out)
			enc.Write(m.Data)
			enc.Close()
			out.WriteString("\"}\n")
		} else {
			pre := m.Data
			more := ""
			if len(pre) > 16 {
				pre, more = pre[:16], "…"
			}
			fmt.Fprintf(out, "%s %-24s %8s  %s%s\n", fmtTime(m.TimeNs), m.Topic, units.FormatSize(int64(len(m.Data))), hex.EncodeToString(pre), more)
		}
		n++
		if *limit > 0 && n >= *limit {
			return errLimit
		}
		return nil
	})
	if err != nil && !errors.Is(err, errLimit) {
		out.Flush()
		return c.fail(err)
	}
	return exitOK
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// matchAny reports whether topic matches one of globs (all when none). A
// topic "name#channel" also matches a glob over its name.
func matchAny(globs []string, topic string) bool {
	if len(globs) == 0 {
		return true
	}
	name := topic
	if i := strings.LastIndexByte(topic, '#'); i >= 0 {
		name = topic[:i]
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, topic); ok {
			return true
		}
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// isOffset reports whether a time argument is an offset from the dump's
// start (its value depends on the start) rather than an absolute time.
func isOffset(s string) bool {
	a, err := parseTimeArg(s, 0, 0)
	b, _ := parseTimeArg(s, 1, 0)
	return err == nil && a != b
}

// parseTimeArg parses an absolute time (ns or RFC 3339) or an offset from
// start ("2.5s"); empty gives def.
func parseTimeArg(s string, start, def int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixNano(), nil
	}
	if d, err := units.ParseDuration(s); err == nil {
		return start + int64(d), nil
	}
	return 0, fmt.Errorf("time %q: want nanoseconds, RFC 3339 or an offset like 2.5s", s)
}
