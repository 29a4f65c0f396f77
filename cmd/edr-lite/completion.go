package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// completeVerb is the hidden verb the completion scripts call:
// "edr-lite __complete SHELL WORD... CURRENT" prints the candidates for
// CURRENT, one per line, and nothing when the shell should complete file
// names instead.
const completeVerb = "__complete"

var shells = []string{"bash", "zsh", "fish"}

func init() {
	register(&verb{name: "completion", summary: "print a shell completion script (bash, zsh or fish)", run: runCompletion, actions: shells})
}

func runCompletion(e *env) int {
	c := newCommand(e, "completion", "edr-lite completion bash|zsh|fish",
		`Print a script that makes the shell complete edr-lite's verbs, their flags,
the values of flags that take one of a few words (--format, --compression),
and file names everywhere else. The script asks the binary itself
("edr-lite __complete"), so it stays right when edr-lite is upgraded.

  bash: add to ~/.bashrc     source <(edr-lite completion bash)
        or install it:       edr-lite completion bash > /etc/bash_completion.d/edr-lite
  zsh:  add to ~/.zshrc, after compinit:
                             source <(edr-lite completion zsh)
  fish: install it:          edr-lite completion fish > ~/.config/fish/completions/edr-lite.fish`,
		"source <(edr-lite completion bash)\nedr-lite completion fish > ~/.config/fish/completions/edr-lite.fish", 1, 1)
	args, code, ok := c.parse()
	if !ok {
		return code
	}
	switch args[0] {
	case "bash":
		fmt.Fprint(e.stdout, bashCompletion)
	case "zsh":
		fmt.Fprint(e.stdout, zshCompletion)
	case "fish":
		fmt.Fprint(e.stdout, fishCompletion)
	default:
		return c.usageErr("unknown shell %q (want %s)", args[0], orList(shells))
	}
	return exitOK
}

const bashCompletion = `# bash completion for edr-lite (edr-lite completion bash)
_edr_lite() {
	local cur="${COMP_WORDS[COMP_CWORD]}" IFS=$'\n'
	local out
	out=$("$1" __complete bash "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
	[ -n "$out" ] || return
	COMPREPLY=($(compgen -W "$out" -- "$cur"))
}
complete -o default -o bashdefault -F _edr_lite edr-lite
`

const zshCompletion = `#compdef edr-lite
# zsh completion for edr-lite (edr-lite completion zsh)
_edr_lite() {
	local -a cands
	cands=("${(@f)$("${words[1]}" __complete zsh "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	cands=(${cands:#})
	if (( ${#cands} )); then
		_describe 'edr-lite' cands
	else
		_files
	fi
}
compdef _edr_lite edr-lite
`

const fishCompletion = `# fish completion for edr-lite (edr-lite completion fish)
function __edr_lite_complete
	set -l words (commandline -opc) (commandline -ct)
	$words[1] __complete fish $words[2..-1] 2>/dev/null
end
complete -c edr-lite -f -n 'test (count (__edr_lite_complete)) -gt 0' -a '(__edr_lite_complete)'
complete -c edr-lite -F -n 'test (count (__edr_lite_complete)) -eq 0'
`

// candidate is one completion with its description.
type candidate struct{ word, desc string }

// probeCommand returns the command verb v declares, without running it.
func probeCommand(v *verb) *command {
	var c *command
	v.run(&env{stdout: io.Discard, stderr: io.Discard, probe: func(pc *command) { c = pc }})
	return c
}

// runComplete prints the candidates for the last of words (the words
// after "edr-lite", the last one being completed, maybe "") for shell.
func runComplete(args []string, w io.Writer) int {
	if len(args) == 0 {
		return exitUsage
	}
	shell, words := args[0], args[1:]
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	var cands []candidate
	switch {
	case len(words) == 1 && strings.HasPrefix(cur, "-"):
		cands = []candidate{{"--help", "show the verbs"}, {"--version", "print the build"}}
	case len(words) == 1:
		cands = verbCandidates()
	case words[0] == "help" && len(words) == 2:
		cands = verbCandidates()
	default:
		if v := verbs[words[0]]; v != nil {
			if c := probeCommand(v); c != nil {
				cands = c.complete(v, words[1:])
			}
		}
	}
	for _, cd := range cands {
		if !strings.HasPrefix(cd.word, cur) {
			continue
		}
		switch shell {
		case "zsh":
			fmt.Fprintf(w, "%s:%s\n", strings.ReplaceAll(cd.word, ":", `\:`), cd.desc)
		case "fish":
			fmt.Fprintf(w, "%s\t%s\n", cd.word, cd.desc)
		default:
			fmt.Fprintln(w, cd.word)
		}
	}
	return exitOK
}

func verbCandidates() []candidate {
	var out []candidate
	for n, v := range verbs {
		out = append(out, candidate{n, v.summary})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].word < out[j].word })
	return append(out, candidate{"help", "show the verbs, or the help of one"})
}

// complete returns the candidates after "edr-lite VERB" for words (the
// last being completed): a flag's values, the flags, or the verb's actions.
func (c *command) complete(v *verb, words []string) []candidate {
	cur := words[len(words)-1]
	if len(words) > 1 {
		if f := c.lookupFlag(words[len(words)-2]); f != nil && !isBool(f) {
			var out []candidate
			for _, val := range c.enums[f.Name] {
				out = append(out, candidate{val, ""})
			}
			return out // none: the shell completes file names
		}
	}
	if strings.HasPrefix(cur, "-") {
		var out []candidate
		c.fs.VisitAll(func(f *flag.Flag) {
			_, usage := flagArg(f)
			out = append(out, candidate{flagSpelling(f.Name), usage})
		})
		return out
	}
	// an action is the first word that is neither a flag nor a flag's value
	positional := 0
	for i := 0; i < len(words)-1; i++ {
		if f := c.lookupFlag(words[i]); f != nil {
			if !isBool(f) && !strings.Contains(words[i], "=") {
				i++
			}
			continue
		}
		positional++
	}
	if positional == 0 && len(v.actions) > 0 {
		var out []candidate
		for _, a := range v.actions {
			out = append(out, candidate{a, ""})
		}
		return out
	}
	return nil
}

// lookupFlag returns the flag a word names ("--from", "-o", "--from=x"),
// or nil.
func (c *command) lookupFlag(word string) *flag.Flag {
	if !strings.HasPrefix(word, "-") {
		return nil
	}
	name, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
	return c.fs.Lookup(name)
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// enum lists the values shell completion offers for flag name.
func (c *command) enum(name string, values ...string) {
	if c.enums == nil {
		c.enums = map[string][]string{}
	}
	c.enums[name] = values
}
