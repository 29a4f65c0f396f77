// This file and frame_unsafe.go hold the only unsafe code of the package.
// numBox turns a float64 into a lua.LValue without one heap allocation per
// value, by carving values out of a block of float64s (the same trick
// gopher-lua's VM uses for arithmetic results). It depends on the layout of
// an interface value holding an LNumber.

package scripts

import (
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
