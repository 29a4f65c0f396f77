package scripts

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Budget bounds what one rule may spend. Zero fields take the defaults.
type Budget struct {
	// Instructions is the number of Lua VM instructions one callback
	// (on_message, on_tick, on_dump_finished) may execute. Loading the file
	// gets LoadFactor times as many. Default 100000.
	Instructions int64
	// MaxString is the largest string a rule may build (by "..",
	// string.rep, string.format, string.gsub, table.concat, m:str, m:bytes).
	// Default 1 MiB.
	MaxString int
	// Memory bounds the estimated size of everything the rule keeps
	// (globals, upvalues and what they reach), checked between callbacks
	// whenever enough has been executed or built since the last check.
	// Default 16 MiB.
	Memory int64
	// CallStack is the Lua call depth. Default 200.
	CallStack int
	// Registry is the largest Lua value stack, in values. Default 65536.
	Registry int
	// LogPerSecond is how many log(...) lines a rule may emit per second of
	// message time (with the same burst); the rest are counted as dropped.
	// Default 10.
	LogPerSecond int
}

// MaxInstructions is the largest instruction budget (larger ones are
// lowered to it), so that budget arithmetic (LoadFactor, pattern steps)
// cannot overflow. At tens of nanoseconds an instruction it is years.
const MaxInstructions = 1 << 55

// LoadFactor multiplies Budget.Instructions for running the rule file's
// top level.
const LoadFactor = 10

// MaxSourceBytes is the largest rule file accepted.
const MaxSourceBytes = 256 << 10

func (b Budget) withDefaults() Budget {
	if b.Instructions <= 0 {
		b.Instructions = 100_000
	}
	b.Instructions = min(b.Instructions, MaxInstructions)
	if b.MaxString <= 0 {
		b.MaxString = 1 << 20
	}
	if b.Memory <= 0 {
		b.Memory = 16 << 20
	}
	if b.CallStack <= 0 {
		b.CallStack = 200
	}
	if b.Registry <= 0 {
		b.Registry = 1 << 16
	}
	if b.LogPerSecond <= 0 {
		b.LogPerSecond = 10
	}
	return b
}

// meter is installed as the Lua state's context. gopher-lua calls Done
// before every VM instruction; meter uses that as an instruction-counting
// hook (a nil channel never fires, a closed one makes the VM raise Err()).
// It also looks at the instruction about to run when it is one whose cost
// is not one instruction: it refuses a concatenation that would build a
// string over the limit before the allocation happens, charges a table
// store whose integer key lies past the end of the table's array (gopher-lua
// fills the gap with nils, so t[1e7] = 1 would allocate 160 MB in one
// instruction), and charges a length operator that scans trailing nils.
// Instruction counting makes budgets deterministic: a rule blows its budget
// at the same instruction on every machine.
//
// Not safe for concurrent use: it belongs to one Lua state.
type meter struct {
	L         *lua.LState
	left      int64 // instructions left in this callback
	used      int64 // instructions since the last memory walk
	strBytes  int64 // bytes built (strings, table slots) since the last memory walk
	maxString int
	memory    int64  // Budget.Memory
	tripped   string // why the budget blew; sticky until start
	errWhere  string // "file:line:" of the last error() raised with a value that is not a string
	matchers  []*matcher
	abort     atomic.Bool // set from another goroutine: stop the running callback

	st        *stats // the rule's: the running callback's stamp
	seq       uint64 // the running callback's stats.callSeq
	stampLeft int64  // stamp the callback when left falls to this

	proto      *lua.FunctionProto // last prototype seen by the hook
	protoWatch bool               // it contains an instruction the hook looks at
	watch      map[*lua.FunctionProto]bool
}

// watched reports whether a function prototype contains an instruction
// the hook charges (concatenation, table store, length). Called only when
// the running prototype changes.
func (m *meter) watched(p *lua.FunctionProto) bool {
	c, ok := m.watch[p]
	if !ok {
		if m.watch == nil {
			m.watch = map[*lua.FunctionProto]bool{}
		}
		for _, inst := range p.Code {
			if op := int(inst >> 26); op == lua.OP_CONCAT || op == lua.OP_SETTABLE || op == lua.OP_LEN {
				c = true
				break
			}
		}
		m.watch[p] = c
	}
	return c
}

// abortReason is the error of a callback stopped by Rule.abort.
const abortReason = "stopped: the recorder is shutting down"

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Deadline reports no deadline: the budget is counted, not timed.
func (m *meter) Deadline() (time.Time, bool) { return time.Time{}, false }

// Value returns nil.
func (m *meter) Value(any) any { return nil }

// Err returns why the budget blew, or nil.
func (m *meter) Err() error {
	if m.tripped == "" {
		return nil
	}
	return errors.New(m.tripped)
}

// Done is the per-instruction hook.
func (m *meter) Done() <-chan struct{} {
	m.left--
	if m.left <= m.stampLeft {
		m.stampLeft = math.MinInt64
		if m.st != nil {
			m.st.stamp.Store(int64(time.Since(monoStart)))
			m.st.stampSeq.Store(m.seq)
		}
	}
	if m.left&0xff == 0 && m.abort.Load() {
		m.tripped, m.left = abortReason, -1
	}
	if m.left < 0 {
		if m.tripped == "" {
			m.tripped = "instruction budget exhausted (runaway loop?)"
		}
		return closedDone
	}
	if m.tripped != "" {
		// a script caught the budget error with pcall: keep failing
		return closedDone
	}
	p, pc := currentFrame(m.L)
	if p != m.proto {
		m.proto, m.protoWatch = p, p != nil && m.watched(p)
	}
	if !m.protoWatch || pc < 1 || pc > len(p.Code) {
		return nil
	}
	inst := p.Code[pc-1]
	a, b, c := int(inst>>18)&0xff, int(inst&0x1ff), int(inst>>9)&0x1ff
	switch int(inst >> 26) {
	case lua.OP_CONCAT:
		n := 0
		for i := b; i <= c; i++ {
			if s, ok := m.L.Get(i + 1).(lua.LString); ok {
				n += len(s)
			} else {
				n += 32 // numbers format short; other operands fail or use __concat
			}
		}
		if n > m.maxString {
			m.tripped = fmt.Sprintf("concatenation would build %d bytes (limit %d)", n, m.maxString)
			return closedDone
		}
		m.strBytes += int64(n)
		m.left -= int64(n >> 6) // copying costs like instructions
	case lua.OP_SETTABLE:
		t, ok := m.L.Get(a + 1).(*lua.LTable)
		if !ok {
			return nil
		}
		var key lua.LValue
		if b&rkConstant != 0 {
			if k := b &^ rkConstant; k < len(p.Constants) {
				key = p.Constants[k]
			}
		} else {
			key = m.L.Get(b + 1)
		}
		if k, ok := key.(lua.LNumber); ok && !m.gap(t, float64(k)) {
			return closedDone
		}
	case lua.OP_LEN:
		if t, ok := m.L.Get(b + 1).(*lua.LTable); ok {
			m.chargeLen(t)
		}
	}
	return nil
}

// rkConstant marks an RK operand that names a constant, not a register
// (BITRK in Lua 5.1's lopcodes.h, with gopher-lua's 9-bit B and C).
const rkConstant = 1 << 8

// gap charges the store of integer key k into t when it lies past the end
// of t's array: gopher-lua fills the slots between with nils. A gap larger
// than the memory budget trips the meter (false).
func (m *meter) gap(t *lua.LTable, k float64) bool {
	if k < 1 || k >= float64(lua.MaxArrayIndex) || k != float64(int64(k)) {
		return true // the hash part, one slot
	}
	n, _ := arrayLen(t)
	slots := int64(k) - 1 - int64(n)
	if slots <= 0 {
		return true
	}
	if bytes := slots * 16; bytes > m.memory {
		m.tripped = fmt.Sprintf("table index %d would add %d array slots (%d bytes, memory limit %d)", int64(k), slots, bytes, m.memory)
		return false
	}
	m.strBytes += slots * 16
	m.left -= slots // gopher-lua appends the nils one by one
	return true
}

// chargeLen charges the length of t when gopher-lua computes it by
// scanning the array back over trailing nils.
func (m *meter) chargeLen(t *lua.LTable) {
	if n, lastNil := arrayLen(t); lastNil {
		m.left -= int64(n >> 3)
	}
}

// charge accounts for a string of n bytes built by a Go function and raises
// a Lua error naming what when it is over the limit.
func (m *meter) charge(L *lua.LState, what string, n int) {
	if n > m.maxString || n < 0 {
		m.tripped = fmt.Sprintf("%s would build %d bytes (limit %d)", what, n, m.maxString)
		L.RaiseError("%s", m.tripped)
	}
	m.strBytes += int64(n)
	m.left -= int64(n >> 6) // copying costs like instructions
}

// stampAfter is how many instructions a callback runs before the meter
// reads the clock for Status (stats.callSeq): short callbacks never do.
const stampAfter = 4096

// start arms the meter for one callback of n instructions.
func (m *meter) start(n int64) {
	m.left, m.tripped = n, ""
	m.stampLeft = n - stampAfter
}

// spent returns the instructions executed since start(n).
func (m *meter) spent(n int64) int64 {
	if m.left < 0 {
		return n
	}
	return n - m.left
}
