// This file and numbox_unsafe.go hold the only unsafe code of the package.
// currentFrame reads the running function prototype and program counter,
// so the budget hook can refuse a string concatenation before it allocates;
// arrayLen reads the length of a table's array part, so a store far past
// its end or a length scan is charged. Both depend on gopher-lua's internal
// layout; the layout is checked once at init through reflect and the peek
// is switched off (concatenation then is only bounded after the fact by the
// memory walk, table gaps by the instruction budget) if it ever changes.

package scripts

import (
	"reflect"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Offsets of LState.currentFrame, callFrame.Fn and callFrame.Pc, found by
// reflect; peekOK is false when the layout is not what we expect.
var (
	offCurFrame, offFn, offPc uintptr
	peekOK                    bool
	offArray                  uintptr // LTable.array
	arrayOK                   bool
)

func init() {
	if f, ok := reflect.TypeOf(lua.LTable{}).FieldByName("array"); ok && f.Type == reflect.TypeOf([]lua.LValue(nil)) {
		offArray, arrayOK = f.Offset, true
	}
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

// arrayLen returns the length of t's array part and whether its last slot
// is nil (then gopher-lua's # scans back over the trailing nils); 0, false
// when the layout is unknown.
func arrayLen(t *lua.LTable) (n int, lastNil bool) {
	if !arrayOK {
		return 0, false
	}
	a := *(*[]lua.LValue)(unsafe.Add(unsafe.Pointer(t), offArray))
	return len(a), len(a) > 0 && (a[len(a)-1] == lua.LNil || a[len(a)-1] == nil)
}
