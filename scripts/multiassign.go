package scripts

import (
	"fmt"
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// checkMultiAssign refuses the multiple assignments that gopher-lua
// compiles wrongly (yuin/gopher-lua#440, open in v1.1.2). Lua evaluates
// every value of "a, b = b, a" before it assigns any; gopher-lua writes
// the value of a local of the running function into its register as soon
// as it is computed, so a later value that reads that local reads the new
// value ("a, b = b, a" leaves both 2 when a = 1, b = 2), a later table
// target named by it is the new table ("t, t.x = {}, 1"), and a call in a
// later value whose function reads it as an upvalue sees the new value. A
// rule with such a statement computes wrong answers without an error, so it
// is refused at load with the line and the way round: one assignment per
// statement, through a temporary where needed. Globals, upvalues and table
// fields on the left, table keys and "local a, b = b, a" are compiled
// correctly and pass.
//
// It returns nil when the source does not parse: the compiler reports that.
func checkMultiAssign(file, src string) error {
	chunk, err := parse.Parse(strings.NewReader(src), file)
	if err != nil {
		return nil
	}
	w := &maWalker{}
	w.function(nil, chunk)
	if w.bad == nil {
		return nil
	}
	return fmt.Errorf("%s:%d: %s: gopher-lua, the Lua of edr-lite's rules, assigns %s before it evaluates %s (yuin/gopher-lua#440), so this statement gives a wrong result; write one assignment per statement, through a temporary where needed (local t = a; a = b; b = t)",
		file, w.bad.Line(), w.what, w.name, w.after)
}

// maWalker walks a chunk with the locals in scope of each function (a
// stack of blocks per function), in statement order.
type maWalker struct {
	funcs [][][]string // per function, its blocks, each the locals declared so far
	// captured: per function, the names its nested functions use (any
	// name, shadowing ignored: a conservative over-approximation)
	captured []map[string]bool

	bad   *ast.AssignStmt
	what  string // the statement, as "a, b = ..."
	name  string
	after string
}

func (w *maWalker) declare(names ...string) {
	f := w.funcs[len(w.funcs)-1]
	f[len(f)-1] = append(f[len(f)-1], names...)
}

// isLocal reports whether name is a local of the running function here.
func (w *maWalker) isLocal(name string) bool {
	f := w.funcs[len(w.funcs)-1]
	for i := len(f) - 1; i >= 0; i-- {
		for _, n := range f[i] {
			if n == name {
				return true
			}
		}
	}
	return false
}

func (w *maWalker) block(names []string, stmts []ast.Stmt) {
	f := &w.funcs[len(w.funcs)-1]
	*f = append(*f, append([]string(nil), names...))
	w.stmts(stmts)
	*f = (*f)[:len(*f)-1]
}

// function walks a function body: its names used by nested functions are
// collected first, for the calls in a later value.
func (w *maWalker) function(params []string, stmts []ast.Stmt) {
	used := map[string]bool{}
	for _, s := range stmts {
		nestedNames(s, used, false)
	}
	w.funcs = append(w.funcs, [][]string{append([]string(nil), params...)})
	w.captured = append(w.captured, used)
	w.stmts(stmts)
	w.funcs = w.funcs[:len(w.funcs)-1]
	w.captured = w.captured[:len(w.captured)-1]
}

func (w *maWalker) funcExpr(fe *ast.FunctionExpr, self bool) {
	var params []string
	if self {
		params = append(params, "self")
	}
	if fe.ParList != nil {
		params = append(params, fe.ParList.Names...)
	}
	w.function(params, fe.Stmts)
}

func (w *maWalker) stmts(list []ast.Stmt) {
	for _, s := range list {
		if w.bad != nil {
			return
		}
		w.stmt(s)
	}
}

func (w *maWalker) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		w.assign(s)
		w.exprs(s.Lhs...)
		w.exprs(s.Rhs...)
	case *ast.LocalAssignStmt:
		w.exprs(s.Exprs...)
		w.declare(s.Names...)
	case *ast.FuncCallStmt:
		w.exprs(s.Expr)
	case *ast.DoBlockStmt:
		w.block(nil, s.Stmts)
	case *ast.WhileStmt:
		w.exprs(s.Condition)
		w.block(nil, s.Stmts)
	case *ast.RepeatStmt:
		// the condition sees the body's locals
		f := &w.funcs[len(w.funcs)-1]
		*f = append(*f, nil)
		w.stmts(s.Stmts)
		w.exprs(s.Condition)
		*f = (*f)[:len(*f)-1]
	case *ast.IfStmt:
		w.exprs(s.Condition)
		w.block(nil, s.Then)
		w.block(nil, s.Else)
	case *ast.NumberForStmt:
		w.exprs(s.Init, s.Limit, s.Step)
		w.block([]string{s.Name}, s.Stmts)
	case *ast.GenericForStmt:
		w.exprs(s.Exprs...)
		w.block(s.Names, s.Stmts)
	case *ast.FuncDefStmt: // function a.b:c() has self ("local function" is a LocalAssignStmt)
		w.funcExpr(s.Func, s.Name.Method != "")
	case *ast.ReturnStmt:
		w.exprs(s.Exprs...)
	}
}

// exprs walks expressions for the functions defined in them.
func (w *maWalker) exprs(list ...ast.Expr) {
	for _, e := range list {
		if w.bad != nil {
			return
		}
		visit(e, func(e ast.Expr) bool {
			if fe, ok := e.(*ast.FunctionExpr); ok {
				w.funcExpr(fe, false)
				return false
			}
			return true
		})
	}
}

// assign checks one multiple assignment.
func (w *maWalker) assign(s *ast.AssignStmt) {
	if len(s.Lhs) < 2 {
		return
	}
	captured := w.captured[len(w.captured)-1]
	for i, l := range s.Lhs {
		id, ok := l.(*ast.IdentExpr)
		if !ok || !w.isLocal(id.Value) {
			continue
		}
		name := id.Value
		for j := i + 1; j < len(s.Rhs); j++ {
			if reads(s.Rhs[j], name) {
				w.fail(s, name, fmt.Sprintf("value %d, which reads %s", j+1, name))
				return
			}
			if captured[name] && calls(s.Rhs[j]) {
				w.fail(s, name, fmt.Sprintf("value %d, a call of a function that may read %s", j+1, name))
				return
			}
		}
		for j, l2 := range s.Lhs {
			if ag, ok := l2.(*ast.AttrGetExpr); ok && j != i {
				if obj, ok := ag.Object.(*ast.IdentExpr); ok && obj.Value == name {
					w.fail(s, name, fmt.Sprintf("target %d, a field of %s", j+1, name))
					return
				}
			}
		}
	}
}

func (w *maWalker) fail(s *ast.AssignStmt, name, after string) {
	names := make([]string, len(s.Lhs))
	for i, l := range s.Lhs {
		switch l := l.(type) {
		case *ast.IdentExpr:
			names[i] = l.Value
		default:
			names[i] = "…"
		}
	}
	w.bad, w.name, w.after = s, name, after
	w.what = strings.Join(names, ", ") + " = ..."
}

// reads reports whether e reads name directly (not inside a function it
// defines).
func reads(e ast.Expr, name string) bool {
	found := false
	visit(e, func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.IdentExpr:
			found = found || e.Value == name
		case *ast.FunctionExpr:
			return false
		}
		return !found
	})
	return found
}

// calls reports whether e calls a function (not inside a function it
// defines).
func calls(e ast.Expr) bool {
	found := false
	visit(e, func(e ast.Expr) bool {
		switch e.(type) {
		case *ast.FuncCallExpr:
			found = true
		case *ast.FunctionExpr:
			return false
		}
		return !found
	})
	return found
}

// nestedNames adds to used the identifiers read or written inside the
// functions that s defines (inside is true within one).
func nestedNames(s ast.Stmt, used map[string]bool, inside bool) {
	ex := func(list ...ast.Expr) {
		for _, e := range list {
			visit(e, func(e ast.Expr) bool {
				switch e := e.(type) {
				case *ast.IdentExpr:
					if inside {
						used[e.Value] = true
					}
				case *ast.FunctionExpr:
					for _, s := range e.Stmts {
						nestedNames(s, used, true)
					}
					return false
				}
				return true
			})
		}
	}
	st := func(list []ast.Stmt) {
		for _, s := range list {
			nestedNames(s, used, inside)
		}
	}
	switch s := s.(type) {
	case *ast.AssignStmt:
		ex(s.Lhs...)
		ex(s.Rhs...)
	case *ast.LocalAssignStmt:
		ex(s.Exprs...)
	case *ast.FuncCallStmt:
		ex(s.Expr)
	case *ast.DoBlockStmt:
		st(s.Stmts)
	case *ast.WhileStmt:
		ex(s.Condition)
		st(s.Stmts)
	case *ast.RepeatStmt:
		ex(s.Condition)
		st(s.Stmts)
	case *ast.IfStmt:
		ex(s.Condition)
		st(s.Then)
		st(s.Else)
	case *ast.NumberForStmt:
		ex(s.Init, s.Limit, s.Step)
		st(s.Stmts)
	case *ast.GenericForStmt:
		ex(s.Exprs...)
		st(s.Stmts)
	case *ast.FuncDefStmt:
		if s.Name.Func != nil {
			ex(s.Name.Func)
		}
		ex(s.Func)
	case *ast.ReturnStmt:
		ex(s.Exprs...)
	}
}

// visit calls fn for e and, while fn returns true, for the expressions in
// it (a function's body statements are not expressions of e: fn sees the
// FunctionExpr and decides).
func visit(e ast.Expr, fn func(ast.Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		visit(e.Object, fn)
		visit(e.Key, fn)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			visit(f.Key, fn)
			visit(f.Value, fn)
		}
	case *ast.FuncCallExpr:
		visit(e.Func, fn)
		visit(e.Receiver, fn)
		for _, a := range e.Args {
			visit(a, fn)
		}
	case *ast.LogicalOpExpr:
		visit(e.Lhs, fn)
		visit(e.Rhs, fn)
	case *ast.RelationalOpExpr:
		visit(e.Lhs, fn)
		visit(e.Rhs, fn)
	case *ast.StringConcatOpExpr:
		visit(e.Lhs, fn)
		visit(e.Rhs, fn)
	case *ast.ArithmeticOpExpr:
		visit(e.Lhs, fn)
		visit(e.Rhs, fn)
	case *ast.UnaryMinusOpExpr:
		visit(e.Expr, fn)
	case *ast.UnaryNotOpExpr:
		visit(e.Expr, fn)
	case *ast.UnaryLenOpExpr:
		visit(e.Expr, fn)
	}
}
