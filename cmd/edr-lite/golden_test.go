package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/tabwriter"
)

// The CLI's output is pinned byte for byte in testdata/golden/: the help of
// every verb, info and ls of dumps the tests write, and status of a running
// recorder (see TestRunTriggerStatus). After an intended change, rewrite
// them with
//
//	go test ./cmd/edr-lite/ -update
//
// and review the diff before committing it.
var update = flag.Bool("update", false, "rewrite testdata/golden/ from the current output")

const goldenDir = "testdata/golden"

// checkGolden compares got with testdata/golden/name, or writes it there
// with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(goldenDir, filepath.FromSlash(name))
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/edr-lite/ -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (if intended, run go test ./cmd/edr-lite/ -update and review the diff):\n%s",
			path, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines that differ, "-" as pinned, "+" as printed.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl || (i < len(w)) != (i < len(g)) {
			fmt.Fprintf(&b, "line %d:\n-%s\n+%s\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}

// TestGoldenHelp pins the usage and every verb's --help, and that no golden
// help file is left for a verb that is gone.
func TestGoldenHelp(t *testing.T) {
	code, out, errs := runCLI(t, "help")
	if code != exitOK || errs != "" {
		t.Fatalf("help: code %d, stderr %q", code, errs)
	}
	checkGolden(t, "help.txt", out)
	for name := range verbs {
		code, out, errs := runCLI(t, name, "--help")
		if code != exitOK || errs != "" {
			t.Errorf("%s --help: code %d, stderr %q", name, code, errs)
		}
		checkGolden(t, "help/"+name+".txt", out)
	}
	files, _ := filepath.Glob(filepath.Join(goldenDir, "help", "*.txt"))
	for _, f := range files {
		if verbs[strings.TrimSuffix(filepath.Base(f), ".txt")] == nil {
			if *update {
				os.Remove(f)
				continue
			}
			t.Errorf("%s: no such verb (run with -update to remove the file)", f)
		}
	}
}

// scrubDir replaces the test's temporary directory in out by $DIR.
func scrubDir(out, dir string) string { return strings.ReplaceAll(out, dir, "$DIR") }

// TestGoldenInfo pins info, text and JSON, of the test dump (writeTestDump:
// fixed times, writer and creation time) and of its MCAP export.
func TestGoldenInfo(t *testing.T) {
	dir := t.TempDir()
	p := writeTestDump(t, dir, "a.pack")
	m := filepath.Join(dir, "a.mcap")
	if code, out, errs := runCLI(t, "export", "--format", "mcap", p, "-o", m); code != exitOK {
		t.Fatalf("export: %d %s%s", code, out, errs)
	}
	for _, tc := range []struct{ golden, file, flag string }{
		{"info.txt", p, ""},
		{"info.json", p, "--json"},
		{"info-mcap.txt", m, ""},
		{"info-mcap.json", m, "--json"},
	} {
		args := []string{"info", tc.file}
		if tc.flag != "" {
			args = append(args, tc.flag)
		}
		code, out, errs := runCLI(t, args...)
		if code != exitOK || errs != "" {
			t.Fatalf("%v: code %d, stderr %q", args, code, errs)
		}
		checkGolden(t, tc.golden, scrubDir(out, dir))
	}
}

// TestGoldenLs pins ls of a directory with two dumps, an MCAP export and a
// leftover .tmp.
func TestGoldenLs(t *testing.T) {
	dir := t.TempDir()
	a := writeTestDump(t, dir, "20261202T101500Z_hard-brake_0001.pack")
	writeTestDump(t, dir, "20261202T101700Z_hard-brake_0003.pack")
	if code, out, errs := runCLI(t, "export", "--format", "mcap", a, "-o", filepath.Join(dir, "20261202T101500Z_hard-brake_0001.mcap")); code != exitOK {
		t.Fatalf("export: %d %s%s", code, out, errs)
	}
	os.WriteFile(filepath.Join(dir, "20261202T101600Z_manual_0002.pack.tmp"), []byte("partial"), 0o644)
	code, out, errs := runCLI(t, "ls", dir)
	if code != exitOK || errs != "" {
		t.Fatalf("ls: code %d, stderr %q", code, errs)
	}
	checkGolden(t, "ls.txt", scrubDir(out, dir))
}

// Status of a running recorder holds figures that change from run to run
// (uptime, rates, bytes and messages held, cache use, per-source counts).
// The scrubbers below replace exactly those by a placeholder naming the
// quantity ("<rate>"), and the test's temporary directory by $DIR; every
// other value (configured sizes and windows, dump and loss counters, names,
// the layout) is compared as printed. Text tables are split on the
// tabwriter's two-space padding, scrubbed per column and aligned again with
// the CLI's tabwriter settings, so a placeholder's width does not matter.

// statusVolatileJSON are the JSON paths (arrays as []) whose values change
// from run to run.
var statusVolatileJSON = map[string]string{
	"uptime_s":               "<uptime>",
	"arena.used":             "<bytes>",
	"arena.largest_free":     "<bytes>",
	"topics[].rate_hz":       "<rate>",
	"topics[].held_bytes":    "<bytes>",
	"topics[].held_messages": "<count>",
	"topics[].held_seconds":  "<seconds>",
	"topics[].written":       "<count>",
	"topics[].evicted_age":   "<count>",
	"topics[].evicted_size":  "<count>",
	"sources[].messages":     "<count>",
	"sources[].bytes":        "<bytes>",
}

// scrubStatusJSON scrubs a status document and prints it indented with
// sorted keys.
func scrubStatusJSON(t *testing.T, out, dir string) string {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	var walk func(path string, v any) any
	walk = func(path string, v any) any {
		if ph, ok := statusVolatileJSON[path]; ok {
			return ph
		}
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				p := k
				if path != "" {
					p = path + "." + k
				}
				v[k] = walk(p, e)
			}
		case []any:
			for i, e := range v {
				v[i] = walk(path+"[]", e)
			}
		case string:
			return scrubDir(v, dir)
		}
		return v
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(walk("", doc)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// statusVolatileText are, per line prefix or table column, the text
// status's changing figures.
var (
	statusUptime = regexp.MustCompile(`^uptime:  .*$`)
	statusCache  = regexp.MustCompile(`^cache:   \S+ used of (\S+) \(largest free block \S+\)$`)
	statusSource = regexp.MustCompile(`^(source \S+ .*): \d+ messages, \S+, (.*)$`)
	statusWindow = regexp.MustCompile(`^\S+ of (\S+)$`)
	statusColumn = map[string]func(string) string{
		"RATE":          func(string) string { return "<rate>" },
		"HELD":          func(string) string { return "<bytes>" },
		"WINDOW":        func(s string) string { return statusWindow.ReplaceAllString(s, "<seconds> of $1") },
		"EVICTED(size)": func(string) string { return "<count>" },
	}
)

// scrubStatusText scrubs the text status.
func scrubStatusText(out, dir string) string {
	lines := strings.Split(scrubDir(out, dir), "\n")
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case statusUptime.MatchString(l):
			l = "uptime:  <uptime>"
		case statusCache.MatchString(l):
			l = statusCache.ReplaceAllString(l, "cache:   <bytes> used of $1 (largest free block <bytes>)")
		case statusSource.MatchString(l):
			l = statusSource.ReplaceAllString(l, "$1: <count> messages, <bytes>, $2")
		case strings.HasPrefix(l, "TOPIC  "):
			j := i + 1
			for j < len(lines) && lines[j] != "" {
				j++
			}
			b.WriteString(scrubTable(lines[i:j]))
			i = j - 1
			continue
		}
		b.WriteString(l)
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

var cellSep = regexp.MustCompile(`  +`)

// scrubTable scrubs the columns of statusColumn in a tabwriter table (a
// header line, then rows) and aligns it again as the CLI does.
func scrubTable(rows []string) string {
	header := cellSep.Split(strings.TrimSpace(rows[0]), -1)
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 2, 8, 2, ' ', 0)
	for i, r := range rows {
		cells := cellSep.Split(strings.TrimSpace(r), -1)
		if i > 0 {
			for c := range cells {
				if c < len(header) && statusColumn[header[c]] != nil {
					cells[c] = statusColumn[header[c]](cells[c])
				}
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	return buf.String()
}

// TestStatusScrubbers: the scrubbers replace the changing figures of two
// status outputs with different figures by the same placeholders.
func TestStatusScrubbers(t *testing.T) {
	text := func(uptime, used, rate, held, window, evicted, msgs, bytes string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "uptime:  %s\ncache:   %s used of 32.0MiB (largest free block %s)\n", uptime, used, used)
		fmt.Fprintf(&b, "dumps:   1 written, 0 failed\n")
		tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
		fmt.Fprintf(tw, "\nTOPIC\tONLINE\tRATE\tHELD\tWINDOW\tOVERSIZE\tEVICTED(size)\tSOURCE\n")
		fmt.Fprintf(tw, "sensor/a\ttrue\t%s\t%s\t%s of 2.1s\t0\t%s\tshm:/tmp/x/shm\n", rate, held, window, evicted)
		tw.Flush()
		fmt.Fprintf(&b, "\nsource shm /tmp/x/shm: %s messages, %s, 0 lost, 0 rejected, 0 errors\n", msgs, bytes)
		return b.String()
	}
	a := scrubStatusText(text("3s", "1.0KiB", "9.5 Hz", "12B", "0.5s", "0", "7", "448B"), "/tmp/x")
	b := scrubStatusText(text("1m12s", "31.9MiB", "190.3 Hz", "30.1KiB", "2.0s", "12345", "123456", "7.5MiB"), "/tmp/x")
	if a != b {
		t.Errorf("scrubbed text differs:\n%s", lineDiff(a, b))
	}
	for _, want := range []string{"uptime:  <uptime>", "<bytes> used of 32.0MiB", "<rate>", "<seconds> of 2.1s", "$DIR/shm", "<count> messages, <bytes>, 0 lost"} {
		if !strings.Contains(a, want) {
			t.Errorf("scrubbed text lacks %q:\n%s", want, a)
		}
	}
	js := func(rate float64, written int) string {
		return fmt.Sprintf(`{"uptime_s":%v,"arena":{"total":100,"used":%d},"dumps":{"written":1},"topics":[{"name":"a","rate_hz":%v,"written":%d,"retention_seconds":2.1}],"sources":[{"name":"/tmp/x/shm","messages":%d,"lost":0}]}`,
			rate, written, rate, written, written)
	}
	ja, jb := scrubStatusJSON(t, js(1.5, 3), "/tmp/x"), scrubStatusJSON(t, js(190.25, 12345), "/tmp/x")
	if ja != jb {
		t.Errorf("scrubbed JSON differs:\n%s", lineDiff(ja, jb))
	}
	for _, want := range []string{`"total": 100`, `"written": 1`, `"retention_seconds": 2.1`, `"rate_hz": "<rate>"`, `"$DIR/shm"`, `"lost": 0`} {
		if !strings.Contains(ja, want) {
			t.Errorf("scrubbed JSON lacks %s:\n%s", want, ja)
		}
	}
}
