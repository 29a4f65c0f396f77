package scripts

import lua "github.com/yuin/gopher-lua"

// stateBytes estimates the bytes a rule keeps alive: everything reachable
// from its globals, the registry and the upvalues of functions found on the
// way. It stops counting once the estimate passes limit. The estimate is
// coarse (interface-sized slots, string lengths), enough to catch a rule
// that hoards memory, not to account it exactly.
func stateBytes(L *lua.LState, limit int64) int64 {
	var total int64
	seen := map[lua.LValue]struct{}{}
	stack := []lua.LValue{L.G.Global, L.G.Registry}
	push := func(v lua.LValue) {
		switch x := v.(type) {
		case lua.LString:
			total += 16 + int64(len(x))
		case *lua.LTable, *lua.LFunction, *lua.LUserData:
			if _, ok := seen[v]; !ok {
				seen[v] = struct{}{}
				stack = append(stack, v)
			}
		default:
			total += 16
		}
	}
	for len(stack) > 0 && total <= limit {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := v.(type) {
		case *lua.LTable:
			total += 64
			x.ForEach(func(k, v lua.LValue) {
				total += 16
				push(k)
				push(v)
			})
			if x.Metatable != nil {
				push(x.Metatable)
			}
		case *lua.LFunction:
			total += 64
			for _, uv := range x.Upvalues {
				if uv != nil {
					total += 16
					push(uv.Value())
				}
			}
		case *lua.LUserData:
			total += 64
			if x.Metatable != nil {
				push(x.Metatable)
			}
		}
	}
	return total
}
