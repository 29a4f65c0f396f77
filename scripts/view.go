package scripts

import (
	"bytes"
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// accessor reads one fixed-size number at an offset.
type accessor struct {
	name string
	size int
	get  func([]byte) float64
}

var (
	le = binary.LittleEndian
	be = binary.BigEndian
)

var accessors = []accessor{
	{"u8", 1, func(b []byte) float64 { return float64(b[0]) }},
	{"i8", 1, func(b []byte) float64 { return float64(int8(b[0])) }},
	{"u16le", 2, func(b []byte) float64 { return float64(le.Uint16(b)) }},
	{"u16be", 2, func(b []byte) float64 { return float64(be.Uint16(b)) }},
	{"i16le", 2, func(b []byte) float64 { return float64(int16(le.Uint16(b))) }},
	{"i16be", 2, func(b []byte) float64 { return float64(int16(be.Uint16(b))) }},
	{"u32le", 4, func(b []byte) float64 { return float64(le.Uint32(b)) }},
	{"u32be", 4, func(b []byte) float64 { return float64(be.Uint32(b)) }},
	{"i32le", 4, func(b []byte) float64 { return float64(int32(le.Uint32(b))) }},
	{"i32be", 4, func(b []byte) float64 { return float64(int32(be.Uint32(b))) }},
	{"u64le", 8, func(b []byte) float64 { return float64(le.Uint64(b)) }},
	{"u64be", 8, func(b []byte) float64 { return float64(be.Uint64(b)) }},
	{"i64le", 8, func(b []byte) float64 { return float64(int64(le.Uint64(b))) }},
	{"i64be", 8, func(b []byte) float64 { return float64(int64(be.Uint64(b))) }},
	{"f32le", 4, func(b []byte) float64 { return float64(math.Float32frombits(le.Uint32(b))) }},
	{"f32be", 4, func(b []byte) float64 { return float64(math.Float32frombits(be.Uint32(b))) }},
	{"f64le", 8, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) }},
	{"f64be", 8, func(b []byte) float64 { return math.Float64frombits(be.Uint64(b)) }},
}

// aliases: the unsuffixed integer names are little-endian.
var accessorAliases = map[string]string{"u16": "u16le", "i16": "i16le", "u32": "u32le", "i32": "i32le", "u64": "u64le", "i64": "i64le", "f32": "f32le", "f64": "f64le"}

// newView builds the message view: one userdata reused for every message.
// Methods live in a table that is the userdata's __index, so m:f32le(0)
// finds its function with one table lookup; the fields (topic, ts, gen_ts,
// seq, size) are computed on access by that table's own __index.
func (r *Rule) newView() *lua.LUserData {
	L := r.L
	ud := L.NewUserData()
	methods := L.NewTable()
	for _, a := range accessors {
		methods.RawSetString(a.name, L.NewFunction(func(L *lua.LState) int {
			b := r.at(L, a.name, 2, a.size)
			L.Push(r.nums.box(a.get(b)))
			return 1
		}))
	}
	for alias, name := range accessorAliases {
		methods.RawSetString(alias, methods.RawGetString(name))
	}
	methods.RawSetString("str", L.NewFunction(func(L *lua.LState) int {
		b := r.span(L, "str")
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		L.Push(lua.LString(b))
		return 1
	}))
	methods.RawSetString("bytes", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString(r.span(L, "bytes")))
		return 1
	}))
	// m:f(path): a field of the topic's type by path (fields.go);
	// m:num(path) the same field as a number: nil when the message does
	// not hold it, an error naming path and topic when it holds a string
	// or a bool (what a rule that computes with it needs)
	byPath := func(name string, num bool) *lua.LFunction {
		return L.NewFunction(func(L *lua.LState) int {
			if L.Get(1) != lua.LValue(r.view) {
				L.RaiseError("call it as m:%s(path)", name)
			}
			p, ok := L.Get(2).(lua.LString)
			if !ok {
				L.RaiseError("m:%s: argument 1 must be a field path such as \"wheel[2]\", got %s", name, L.Get(2).Type())
			}
			v := r.field(L, string(p), true)
			if _, isNum := v.(lua.LNumber); num && !isNum && v != lua.LNil {
				L.RaiseError("m:num(%q): topic %s: the field holds a %s, not a number", string(p), r.message(L).Topic, v.Type())
			}
			L.Push(v)
			return 1
		})
	}
	methods.RawSetString("f", byPath("f", false))
	methods.RawSetString("num", byPath("num", true))
	fields := L.NewTable()
	fields.RawSetString("__index", L.NewFunction(r.viewField))
	L.SetMetatable(methods, fields)
	r.methods = methods

	mt := L.NewTable()
	mt.RawSetString("__index", methods)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("the message view is read-only")
		return 0
	}))
	mt.RawSetString("__metatable", lua.LString("message view"))
	L.SetMetatable(ud, mt)
	return ud
}

// viewFields are the message fields, computed by viewField on access.
var viewFields = []string{"topic", "ts", "gen_ts", "seq", "size"}

// findUsedFields records which view fields the script names as constants.
// Those are stored in the methods table before each on_message, so
// reading m.ts is one table lookup instead of a call through __index
// (which would also allocate the key). Fields reached by a computed key
// still go through __index.
func (r *Rule) findUsedFields(p *lua.FunctionProto) {
	for _, c := range p.Constants {
		if s, ok := c.(lua.LString); ok {
			view := false
			for i, f := range viewFields {
				if string(s) == f {
					r.usedFields |= 1 << i
					view = true
				}
			}
			if !view {
				r.noteName(string(s))
			}
		}
	}
	for _, sub := range p.FunctionPrototypes {
		r.findUsedFields(sub)
	}
}

// storeFields puts the used fields of m into the methods table.
func (r *Rule) storeFields(m *Message) {
	if len(r.usedNames) > 0 {
		r.storeTyped(m)
	}
	u := r.usedFields
	if u == 0 {
		return
	}
	t := r.methods
	if u&1 != 0 && (m.Topic != r.topicStr || !r.topicSet) {
		// unchanged topic: the stored value is still right
		r.topicStr, r.topicVal, r.topicSet = m.Topic, lua.LString(m.Topic), true
		t.RawSetString("topic", r.topicVal)
	}
	if u&2 != 0 {
		t.RawSetString("ts", r.nums.box(float64(r.now))) // the message time in the rule's domain
	}
	if u&4 != 0 {
		t.RawSetString("gen_ts", r.nums.box(float64(m.GenTS)))
	}
	if u&8 != 0 {
		t.RawSetString("seq", r.nums.box(float64(m.Seq)))
	}
	if u&16 != 0 {
		t.RawSetString("size", r.nums.box(float64(m.length())))
	}
}

// message returns the current message or raises: the view is only valid
// inside on_message.
func (r *Rule) message(L *lua.LState) *Message {
	if r.cur == nil {
		L.RaiseError("the message view is only valid inside on_message (do not keep it)")
	}
	return r.cur
}

// viewField is __index for m.topic, m.ts, m.gen_ts, m.seq, m.size, and
// for any other name a field of the topic's type (m.speed; fields.go).
func (r *Rule) viewField(L *lua.LState) int {
	key, _ := L.Get(2).(lua.LString)
	m := r.message(L)
	switch key {
	case "topic":
		if m.Topic != r.topicStr || r.topicVal == nil {
			r.topicStr, r.topicVal, r.topicSet = m.Topic, lua.LString(m.Topic), false
		}
		L.Push(r.topicVal)
	case "ts":
		L.Push(r.nums.box(float64(r.now)))
	case "gen_ts":
		L.Push(r.nums.box(float64(m.GenTS)))
	case "seq":
		L.Push(r.nums.box(float64(m.Seq)))
	case "size":
		L.Push(r.nums.box(float64(m.length())))
	default:
		if key == "" || m.Type == nil {
			L.RaiseError("message view has no field %s (want topic, ts, gen_ts, seq, size, a method, or a field of a typed topic)", L.Get(2).String())
		}
		L.Push(r.field(L, string(key), false))
	}
	return 1
}

// payload returns the current message's payload, or raises when the ring
// overwrote it before this read (Feed then counts the message as skipped).
func (r *Rule) payload(L *lua.LState) []byte {
	b, ok := r.data(r.message(L))
	if !ok {
		L.RaiseError("message %s #%d: overwritten in the recorder's ring before the rule read it (counted as skipped)", r.cur.Topic, r.cur.Seq)
	}
	return b
}

// offset reads argument n as a byte offset.
func (r *Rule) offset(L *lua.LState, name string, n int) int {
	v, ok := L.Get(n).(lua.LNumber)
	if !ok || v != v || v < -1<<40 || v > 1<<40 || v != lua.LNumber(int64(v)) {
		L.RaiseError("m:%s: argument %d must be an integer, got %s", name, n-1, L.Get(n).String())
	}
	return int(v)
}

// at returns size bytes at the offset in argument n, or raises an error
// naming the offset and the message size.
func (r *Rule) at(L *lua.LState, name string, n, size int) []byte {
	if L.Get(1) != lua.LValue(r.view) {
		L.RaiseError("call it as m:%s(offset)", name)
	}
	off := r.offset(L, name, n)
	data := r.payload(L)
	if off < 0 || off > len(data)-size {
		L.RaiseError("m:%s(%d): offset out of range: %d bytes at offset %d, message size %d", name, off, size, off, len(data))
	}
	return data[off : off+size]
}

// span is (off, len) for str and bytes, charged to the string budget.
func (r *Rule) span(L *lua.LState, name string) []byte {
	if L.Get(1) != lua.LValue(r.view) {
		L.RaiseError("call it as m:%s(offset, length)", name)
	}
	off := r.offset(L, name, 2)
	n := r.offset(L, name, 3)
	data := r.payload(L)
	if n < 0 || off < 0 || off > len(data) || n > len(data)-off {
		L.RaiseError("m:%s(%d, %d): out of range, message size %d", name, off, n, len(data))
	}
	r.meter.charge(L, "m:"+name, n)
	return data[off : off+n]
}
