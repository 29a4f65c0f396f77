package main

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// binaryVerbs returns, through the built binary, each verb "edr-lite
// --help" lists with its description, and the flags "edr-lite VERB --help"
// lists for it.
func binaryVerbs(t *testing.T) (summary map[string]string, flags map[string][]string) {
	t.Helper()
	code, out, errs := runBin(t, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d %s", code, errs)
	}
	summary, flags = map[string]string{}, map[string][]string{}
	in := false
	for _, l := range strings.Split(out+errs, "\n") {
		switch {
		case l == "Verbs:":
			in = true
		case in && strings.TrimSpace(l) == "":
			in = false
		case in:
			v, s, _ := strings.Cut(strings.TrimSpace(l), " ")
			summary[v] = strings.TrimSpace(s)
		}
	}
	if len(summary) < 10 {
		t.Fatalf("--help lists %d verbs:\n%s%s", len(summary), out, errs)
	}
	flagLine := regexp.MustCompile(`^  (-{1,2}[a-z][a-z0-9-]*)`)
	for v := range summary {
		code, out, errs := runBin(t, v, "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d %s", v, code, errs)
		}
		_, fl, _ := strings.Cut(out, "\nFlags:\n")
		flags[v] = []string{}
		for _, l := range strings.Split(fl, "\n") {
			if m := flagLine.FindStringSubmatch(l); m != nil {
				flags[v] = append(flags[v], m[1])
			}
		}
		sort.Strings(flags[v])
	}
	return summary, flags
}

// mdCells splits a Markdown table row into its cells ("\|" is a | inside
// a cell).
func mdCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	parts := strings.Split(strings.ReplaceAll(row, `\|`, "\x00"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(strings.ReplaceAll(parts[i], "\x00", "|"))
	}
	return parts
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	flagWord = regexp.MustCompile(`(?:^|[\s\[(|/])(--?[a-z][a-z0-9-]*)`)
)

// TestCLIDoc is issue 30 item 17's docs/cli.md test, through the built
// binary: the table "Every verb and its flags" lists exactly the verbs
// the binary has, with the description "edr-lite --help" gives and every
// flag "edr-lite VERB --help" lists (both directions); every flag the
// other tables give for a verb (the edr-lite column of the mappings, the
// verbs of the reading table) is one of its flags; the selection flags
// are flags of every verb said to take them; and no row says "not yet" of
// a flag the binary has. Before, cli.md called replay's --delay,
// --start-paused, --remap, --clock and loop count "not yet", and the
// top-level help said merge makes "one pack dump" and export writes "JSON
// lines or MCAP".
func TestCLIDoc(t *testing.T) {
	summary, flags := binaryVerbs(t)
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	// --help is every verb's (not listed among its flags)
	has := func(v, f string) bool { return f == "--help" || slices.Contains(flags[v], f) }
	anyHas := func(f string) string {
		for v := range flags {
			if has(v, f) {
				return v
			}
		}
		return ""
	}

	section, edrCol := "", -1
	seen := map[string]bool{}
	for n, line := range strings.Split(string(doc), "\n") {
		where := func() string { return "docs/cli.md:" + strconv.Itoa(n+1) }
		if strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ") {
			section, edrCol = strings.TrimLeft(line, "# "), -1
			continue
		}
		if !strings.HasPrefix(line, "|") {
			edrCol = -1
			continue
		}
		cells := mdCells(line)
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		if edrCol < 0 { // the header row
			edrCol = slices.IndexFunc(cells, func(c string) bool { return c == "edr-lite" || c == "verb" || c == "flag" })
			if edrCol < 0 {
				edrCol = len(cells) // no column of edr-lite's
			}
			continue
		}
		if strings.Contains(line, "not yet") {
			for _, m := range flagWord.FindAllStringSubmatch(strings.Join(codeSpan.FindAllString(line, -1), " "), -1) {
				if v := anyHas(m[1]); v != "" {
					t.Errorf("%s: says \"not yet\", but %s has %s: %s", where(), v, m[1], line)
				}
			}
		}
		if edrCol >= len(cells) {
			continue
		}
		switch section {
		case "Every verb and its flags":
			if len(cells) != 3 {
				t.Errorf("%s: want | verb | what it does | flags |: %s", where(), line)
				continue
			}
			v := strings.Trim(cells[0], "`")
			seen[v] = true
			s, ok := summary[v]
			switch {
			case !ok:
				t.Errorf("%s: the binary has no verb %q", where(), v)
				continue
			case cells[1] != s:
				t.Errorf("%s: %s: %q, but edr-lite --help says %q", where(), v, cells[1], s)
			}
			var listed []string
			for _, m := range codeSpan.FindAllStringSubmatch(cells[2], -1) {
				listed = append(listed, m[1])
			}
			sort.Strings(listed)
			if !slices.Equal(listed, flags[v]) {
				t.Errorf("%s: %s's flags: cli.md lists %v, edr-lite %s --help %v", where(), v, listed, v, flags[v])
			}
		case "Selection flags":
			verbsTaking := []string{"cat", "export", "filter", "split", "merge", "replay"}
			for _, m := range flagWord.FindAllStringSubmatch(cells[edrCol], -1) {
				for _, v := range verbsTaking {
					if !has(v, m[1]) {
						t.Errorf("%s: %s is a selection flag, but %s has no %s", where(), m[1], v, m[1])
					}
				}
			}
		default:
			for _, span := range codeSpan.FindAllStringSubmatch(cells[edrCol], -1) {
				v, _, _ := strings.Cut(span[1], " ")
				if _, ok := summary[v]; !ok {
					continue
				}
				for _, m := range flagWord.FindAllStringSubmatch(span[1], -1) {
					if !has(v, m[1]) {
						t.Errorf("%s: `%s`: %s has no %s", where(), span[1], v, m[1])
					}
				}
			}
		}
	}
	for v := range summary {
		if !seen[v] {
			t.Errorf("docs/cli.md's table \"Every verb and its flags\" lacks the verb %s (%s)", v, summary[v])
		}
	}
}
