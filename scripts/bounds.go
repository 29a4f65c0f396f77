package scripts

import (
	"sort"
	"strconv"
	"unicode/utf8"
)

// What a rule's trigger carries into a dump's information (and what
// "edr-lite rules test" prints and compares) is bounded, whatever the rule
// builds: a string may be Budget.MaxString (1 MiB) long, and a rule that
// fires hundreds of times would otherwise write hundreds of MB of reasons
// into one dump (past dumpinfo.MaxJSONSize, unreadable) or into a report.
// A longer text is cut to its bound and ends with Truncated; the bounds
// apply in trigger{} itself, so the live recorder and a replay of the same
// rule record the same text.
const (
	// MaxRuleName bounds a rule's name (rule{name = ...}; a longer one is
	// a declaration error): it is every trigger's rule, and its reason
	// when trigger{} gives none.
	MaxRuleName = 128
	// MaxReason bounds a trigger's reason (it also names the dump file,
	// of which 64 characters are used).
	MaxReason = 256
	// MaxTag bounds a trigger's tag.
	MaxTag = 1024
	// MaxParams bounds the parameters a trigger records; more are left
	// out, and a parameter named Truncated says how many.
	MaxParams = 64
	// MaxParamName and MaxParamValue bound each recorded parameter's name
	// and value.
	MaxParamName  = 128
	MaxParamValue = 1024
)

// Truncated ends a text cut to its bound (it counts in the bound).
const Truncated = "…[truncated]"

// Bound returns s when it is at most max bytes long, else its longest
// prefix that ends on a character boundary and leaves room for Truncated,
// followed by Truncated: max bytes at most.
func Bound(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len(Truncated)
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + Truncated
}

// boundParams returns the parameters a trigger records: p itself when it
// is within the bounds, else a copy with names and values cut to
// MaxParamName and MaxParamValue and at most MaxParams of them (the first
// by name), the rest counted under the name Truncated.
func boundParams(p map[string]string) map[string]string {
	over := len(p) > MaxParams
	for k, v := range p {
		over = over || len(k) > MaxParamName || len(v) > MaxParamValue
	}
	if !over {
		return p
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, min(len(keys), MaxParams))
	kept := keys[:min(len(keys), MaxParams-1)]
	if len(keys) <= MaxParams {
		kept = keys
	}
	for _, k := range kept {
		out[Bound(k, MaxParamName)] = Bound(p[k], MaxParamValue)
	}
	if n := len(keys) - len(kept); n > 0 {
		out[Truncated] = strconv.Itoa(n) + " more parameter(s) not recorded"
	}
	return out
}
