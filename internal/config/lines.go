package config

import (
	"regexp"
	"strconv"
	"strings"
)

// lineIndex maps the keys a file sets to their lines, with array-of-tables
// elements numbered as the checks name them: "recorder.cache_size",
// "topic[1].pre", "source.udp[0].listen", "rule[2].params.topik" (also
// inside an inline table), and each table header ("rule[2]",
// "source.raw[0].filter").
type lineIndex struct {
	at     map[string]int
	byLine map[int]string // the first key set or table opened on each line
}

var (
	reArrayHeader = regexp.MustCompile(`^\s*\[\[\s*([^\]]+?)\s*\]\]`)
	reTableHeader = regexp.MustCompile(`^\s*\[\s*([^\]]+?)\s*\]`)
	reKey         = regexp.MustCompile(`^\s*("[^"]*"|[A-Za-z0-9_.-]+)\s*=\s*(.*)$`)
	reInlineKey   = regexp.MustCompile(`(?:^|[{,])\s*("[^"]*"|[A-Za-z0-9_-]+)\s*=`)
	// reBrokenHeader is a table header that does not close ("[recorder").
	reBrokenHeader = regexp.MustCompile(`^\s*\[+\s*([A-Za-z0-9_.-]+)`)
)

// indexLines scans data line by line. It is a locator for messages, not a
// parser: the file has already been decoded when it runs, and a key it
// cannot place gets its table's line or none.
func indexLines(data []byte) lineIndex {
	ix := lineIndex{at: map[string]int{}, byLine: map[int]string{}}
	counts := map[string]int{} // array table path (plain) -> elements so far
	cur := ""
	set := func(k string, line int) {
		if _, ok := ix.at[k]; !ok {
			ix.at[k] = line
		}
		if _, ok := ix.byLine[line]; !ok {
			ix.byLine[line] = k
		}
	}
	// indexed turns a plain dotted path into the indexed one: every prefix
	// that is an array of tables gets its current element.
	indexed := func(plain string) string {
		parts := strings.Split(plain, ".")
		out := make([]string, 0, len(parts))
		for i, p := range parts {
			out = append(out, unquote(p))
			if n, ok := counts[strings.Join(parts[:i+1], ".")]; ok {
				out[len(out)-1] += "[" + strconv.Itoa(n-1) + "]"
			}
		}
		return strings.Join(out, ".")
	}
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		if m := reArrayHeader.FindStringSubmatch(line); m != nil {
			plain := strings.ReplaceAll(m[1], " ", "")
			counts[plain]++
			cur = indexed(plain)
			set(cur, n)
			continue
		}
		if m := reTableHeader.FindStringSubmatch(line); m != nil {
			cur = indexed(strings.ReplaceAll(m[1], " ", ""))
			set(cur, n)
			continue
		}
		m := reKey.FindStringSubmatch(line)
		if m == nil {
			if h := reBrokenHeader.FindStringSubmatch(line); h != nil {
				ix.byLine[n] = h[1]
			}
			continue
		}
		k := unquote(m[1])
		if cur != "" {
			k = cur + "." + k
		}
		set(k, n)
		if v := strings.TrimSpace(m[2]); strings.HasPrefix(v, "{") {
			for _, im := range reInlineKey.FindAllStringSubmatch(v, -1) {
				set(k+"."+unquote(im[1]), n)
			}
		}
	}
	return ix
}

func unquote(s string) string { return strings.Trim(s, `"`) }

// find returns the line of key, or of the nearest enclosing key or table
// the file has; 0 when none.
func (ix lineIndex) find(key string) int {
	for k := key; k != ""; {
		if n, ok := ix.at[k]; ok {
			return n
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return 0
}

// keyAt returns the key set (or the table opened) on line n, "" when none.
func (ix lineIndex) keyAt(n int) string { return ix.byLine[n] }
