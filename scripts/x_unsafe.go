package scripts

// This file holds the only unsafe code of the package:
//
//   - numBox turns a float64 into a lua.LValue without one heap allocation
//     per value, by carving values out of a block of float64s (the same
//     trick gopher-lua's VM uses for arithmetic results);
//   - currentFrame reads the running function prototype and program counter,
//     so the budget hook can refuse a string concatenation before it
//     allocates.
//
// Both depend on gopher-lua's internal layout; the layout is checked once at
// init through reflect and peek is switched off (concatenation then is only
// bounded after the fact by the memory walk) if it ever changes.

import (
	"reflect"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// iface is the runtime layout of a non-empty interface value.
type iface struct {
	tab  unsafe.Pointer
	data unsafe.Pointer
}

// smallInts are pre-boxed integers 0..255, shared by every rule.
var smallInts [256]lua.LValue

func init() {
	for i := range smallInts {
		smallInts[i] = lua.LNumber(i)
	}
}

// numBoxBlock is how many numbers share one allocation.
const numBoxBlock = 256

// numBox boxes numbers for one Lua state. Not safe for concurrent use.
type numBox struct {
	block []float64
	proto lua.LValue // an LNumber; its type word is reused
}

func (b *numBox) box(v float64) lua.LValue {
	if v >= 0 && v < 256 && v == float64(int(v)) {
		return smallInts[int(v)]
	}
	if len(b.block) == cap(b.block) {
		b.block = make([]float64, 0, numBoxBlock)
		if b.proto == nil {
			b.proto = lua.LNumber(1.5)
		}
	}
	b.block = append(b.block, v)
	out := b.proto
	(*iface)(unsafe.Pointer(&out)).data = unsafe.Pointer(&b.block[len(b.block)-1])
	return out
}

// Offsets of LState.currentFrame, callFrame.Fn and callFrame.Pc, found by
// reflect; peekOK is false when the layout is not what we expect.
var (
	offCurFrame, offFn, offPc uintptr
	peekOK                    bool
)

func init() {
	st, ok := reflect.TypeOf(lua.LState{}).FieldByName("currentFrame")
	if !ok || st.Type.Kind() != reflect.Pointer {
		return
	}
	cf := st.Type.Elem()
	fn, ok1 := cf.FieldByName("Fn")
	pc, ok2 := cf.FieldByName("Pc")
	if !ok1 || !ok2 || fn.Type != reflect.TypeOf((*lua.LFunction)(nil)) || pc.Type.Kind() != reflect.Int {
		return
	}
	offCurFrame, offFn, offPc = st.Offset, fn.Offset, pc.Offset
	peekOK = true
}

// currentFrame returns the function prototype running in the current frame
// and its program counter (one past the instruction about to execute when
// called from the context hook), or nil.
func currentFrame(L *lua.LState) (*lua.FunctionProto, int) {
	if !peekOK {
		return nil, 0
	}
	cf := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(L), offCurFrame))
	if cf == nil {
		return nil, 0
	}
	fn := *(**lua.LFunction)(unsafe.Add(cf, offFn))
	if fn == nil {
		return nil, 0
	}
	return fn.Proto, *(*int)(unsafe.Add(cf, offPc))
}
