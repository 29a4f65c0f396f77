package scripts

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Errors returned by Load and Reload wrap one of these and
// name the rule file and, where there is one, the line.
var (
	// ErrSyntax: the rule file does not parse or compile.
	ErrSyntax = errors.New("scripts: syntax error")
	// ErrDeclaration: the rule{...} declaration is missing or invalid, or a
	// param(...) cannot be satisfied.
	ErrDeclaration = errors.New("scripts: bad rule declaration")
	// ErrRuntime: a Lua error was raised while the rule ran.
	ErrRuntime = errors.New("scripts: runtime error")
	// ErrBudget: a callback exceeded its instruction, string or memory
	// budget.
	ErrBudget = errors.New("scripts: budget exceeded")
	// ErrTooLarge: the rule source is larger than MaxSourceBytes.
	ErrTooLarge = errors.New("scripts: rule source too large")
	// ErrNoRule: Reload was asked for a rule the host does not hold.
	ErrNoRule = errors.New("scripts: no such rule")
	// ErrBusy: a live rule stayed inside a callback for longer than
	// LiveOptions.ControlWait, so a reload could not be carried out.
	ErrBusy = errors.New("scripts: rule busy in a callback")
)

// UnknownParamsError is returned by Load when the configuration gives a
// rule params it does not declare (a typo such as "topik"). It matches
// ErrDeclaration.
type UnknownParamsError struct {
	File     string
	Names    []string // the unknown ones, sorted
	Declared []string // what the rule declares, sorted
}

func (e *UnknownParamsError) Error() string {
	return fmt.Sprintf("%v: %s: unknown params %s", ErrDeclaration, e.File, strings.Join(e.Names, ", "))
}

func (e *UnknownParamsError) Unwrap() error { return ErrDeclaration }
