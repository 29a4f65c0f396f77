package schema

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// builtins are the layout language's types.
var builtins = map[string]node{}

func init() {
	add := func(name string, n node) {
		n.typ = name
		builtins[name] = n
	}
	for _, p := range []struct {
		name string
		p    prim
	}{{"u8", primU8}, {"i8", primI8}, {"bool", primBool}} {
		add(p.name, node{kind: nScalar, prim: p.p, fixed: true, size: 1})
	}
	for _, p := range []struct {
		name string
		p    prim
	}{{"u16", primU16}, {"i16", primI16}, {"u32", primU32}, {"i32", primI32},
		{"u64", primU64}, {"i64", primI64}, {"f32", primF32}, {"f64", primF64}} {
		add(p.name+"le", node{kind: nScalar, prim: p.p, fixed: true, size: primSize[p.p]})
		add(p.name+"be", node{kind: nScalar, prim: p.p, big: true, fixed: true, size: primSize[p.p]})
	}
	for _, k := range []struct {
		name string
		kind nodeKind
	}{{"str", nStr}, {"bytes", nBytes}} {
		add(k.name+"8", node{kind: k.kind, size: 1})
		for _, w := range []int{16, 32} {
			add(fmt.Sprintf("%s%dle", k.name, w), node{kind: k.kind, size: w / 8})
			add(fmt.Sprintf("%s%dbe", k.name, w), node{kind: k.kind, size: w / 8, big: true})
		}
	}
}

// keywords may not name a struct.
var keywords = map[string]bool{"struct": true, "pad": true, "char": true}

// ParseLayout compiles a layout source (docs/schemas.md, "The layout
// language"). Errors are *LayoutError values naming line and column
// ("layout:3:12: unknown type f33le") that wrap ErrInvalid, or ErrLimit
// for a layout beyond MaxDepth, MaxFields or MaxLayoutSize; a source
// larger than MaxSchemaSize is refused before it is read (ErrTooLarge).
// Parsing takes time and memory linear in the source.
func ParseLayout(src []byte) (*Layout, error) {
	if len(src) > MaxSchemaSize {
		return nil, fmt.Errorf("%w: layout of %d bytes, limit %d (MaxSchemaSize)", ErrTooLarge, len(src), MaxSchemaSize)
	}
	p := &parser{src: src, line: 1, structs: map[string]*structType{}}
	root, err := p.parse()
	if err != nil {
		return nil, err
	}
	l := &Layout{root: root}
	l.fields = buildFields(nil, root, nil, nil)
	return l, nil
}

// MustParseLayout is ParseLayout for layouts known to be valid (tests,
// built-in layouts); it panics on error.
func MustParseLayout(src string) *Layout {
	l, err := ParseLayout([]byte(src))
	if err != nil {
		panic(err)
	}
	return l
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tSep         // ';' or a newline
	tIdent
	tInt
	tPunct // { } [ ] ( )
)

type token struct {
	kind      tokKind
	text      string
	line, col int
}

type parser struct {
	src       []byte
	pos       int
	line, bol int // current line and the offset where it begins
	tok       token
	peeked    bool
	structs   map[string]*structType
	decls     int
}

func (p *parser) errorf(t token, limit bool, format string, args ...any) error {
	e := &LayoutError{Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...), Err: ErrInvalid}
	if limit {
		e.Err = ErrLimit
	}
	return e
}

// next returns the next token.
func (p *parser) next() token {
	if p.peeked {
		p.peeked = false
		return p.tok
	}
	p.tok = p.scan()
	return p.tok
}

func (p *parser) peek() token {
	if !p.peeked {
		p.tok = p.scan()
		p.peeked = true
	}
	return p.tok
}

func (p *parser) scan() token {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		t := token{line: p.line, col: p.pos - p.bol + 1}
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '#' || c == '/' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '/':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == '\n' || c == ';':
			p.pos++
			if c == '\n' {
				p.line++
				p.bol = p.pos
			}
			t.kind, t.text = tSep, string(c)
			return t
		case isIdentByte(c, true):
			s := p.pos
			for p.pos < len(p.src) && isIdentByte(p.src[p.pos], false) {
				p.pos++
			}
			t.kind, t.text = tIdent, string(p.src[s:p.pos])
			return t
		case c >= '0' && c <= '9':
			s := p.pos
			for p.pos < len(p.src) && isIdentByte(p.src[p.pos], false) {
				p.pos++
			}
			t.kind, t.text = tInt, string(p.src[s:p.pos])
			return t
		case strings.IndexByte("{}[]()", c) >= 0:
			p.pos++
			t.kind, t.text = tPunct, string(c)
			return t
		default:
			r, _ := utf8.DecodeRune(p.src[p.pos:])
			t.kind, t.text = tPunct, string(r)
			if r == utf8.RuneError {
				t.text = fmt.Sprintf("byte 0x%02x", c)
			}
			p.pos = len(p.src) // stop: the caller reports it
			return t
		}
	}
	return token{kind: tEOF, line: p.line, col: p.pos - p.bol + 1}
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of layout"
	case tSep:
		if t.text == "\n" {
			return "end of line"
		}
	}
	if len(t.text) > 40 {
		return fmt.Sprintf("%.40q...", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

func (p *parser) parse() (*structType, error) {
	root := &structType{}
	seen := map[string]bool{}
	for {
		t := p.next()
		switch {
		case t.kind == tEOF:
			if len(root.members) == 0 {
				return nil, p.errorf(t, false, "no fields")
			}
			return root, nil
		case t.kind == tSep:
		case t.kind == tIdent && t.text == "struct":
			if err := p.parseStruct(t); err != nil {
				return nil, err
			}
		case t.kind == tIdent:
			if err := p.parseMember(root, t, seen); err != nil {
				return nil, err
			}
			if err := p.endMember(false); err != nil {
				return nil, err
			}
		default:
			return nil, p.errorf(t, false, "want a field or a struct, got %s", describe(t))
		}
	}
}

func (p *parser) parseStruct(kw token) error {
	t := p.next()
	if t.kind != tIdent {
		return p.errorf(t, false, "want a struct name after struct, got %s", describe(t))
	}
	name := t.text
	if _, ok := builtins[name]; ok || keywords[name] {
		return p.errorf(t, false, "%s is a built-in type; a struct needs another name", name)
	}
	if p.structs[name] != nil {
		return p.errorf(t, false, "struct %s declared twice", name)
	}
	if b := p.next(); b.kind != tPunct || b.text != "{" {
		return p.errorf(b, false, "want { after struct %s, got %s", name, describe(b))
	}
	st := &structType{name: name}
	seen := map[string]bool{}
	for {
		t := p.next()
		switch {
		case t.kind == tSep:
			continue
		case t.kind == tPunct && t.text == "}":
			if len(st.members) == 0 {
				return p.errorf(t, false, "struct %s has no fields", name)
			}
			p.structs[name] = st
			return nil
		case t.kind == tIdent:
			if err := p.parseMember(st, t, seen); err != nil {
				return err
			}
			if err := p.endMember(true); err != nil {
				return err
			}
		case t.kind == tEOF:
			return p.errorf(kw, false, "struct %s is not closed with }", name)
		default:
			return p.errorf(t, false, "want a field or } in struct %s, got %s", name, describe(t))
		}
	}
}

// endMember checks what follows a member: a separator, the end, or "}"
// inside a struct.
func (p *parser) endMember(inStruct bool) error {
	t := p.peek()
	switch {
	case t.kind == tSep:
		p.next()
		return nil
	case t.kind == tEOF:
		return nil
	case inStruct && t.kind == tPunct && t.text == "}":
		return nil
	}
	return p.errorf(t, false, "want ; or a new line after a field, got %s", describe(t))
}

// parseInt reads a count: 1..max.
func (p *parser) parseInt(what string, max int) (int, token, error) {
	t := p.next()
	if t.kind != tInt {
		return 0, t, p.errorf(t, false, "want the %s (a decimal number), got %s", what, describe(t))
	}
	n := 0
	for i := 0; i < len(t.text); i++ {
		c := t.text[i]
		if c < '0' || c > '9' {
			return 0, t, p.errorf(t, false, "bad %s %s: want decimal digits", what, describe(t))
		}
		if n = n*10 + int(c-'0'); n > max {
			return 0, t, p.errorf(t, true, "%s %s exceeds %d (MaxLayoutSize)", what, t.text, max)
		}
	}
	if n == 0 {
		return 0, t, p.errorf(t, false, "%s must be at least 1", what)
	}
	return n, t, nil
}

func (p *parser) parseMember(st *structType, tt token, seen map[string]bool) error {
	if p.decls++; p.decls > MaxFields {
		return p.errorf(tt, true, "more than %d field declarations (MaxFields)", MaxFields)
	}
	var nd *node
	var m member
	switch tt.text {
	case "pad":
		n, _, err := p.parseInt("pad size", MaxLayoutSize)
		if err != nil {
			return err
		}
		nd = &node{kind: nPad, fixed: true, size: n, n: n, typ: fmt.Sprintf("pad %d", n)}
	case "char":
		nd = &node{kind: nChar, fixed: true}
	case "struct":
		return p.errorf(tt, false, "a struct is declared at the top level, not inside another")
	default:
		if b, ok := builtins[tt.text]; ok {
			nd = &b
		} else if s := p.structs[tt.text]; s != nil {
			nd = &node{kind: nStruct, st: s, fixed: s.fixed, size: s.size, typ: s.name}
		} else {
			return p.errorf(tt, false, "%s", unknownType(tt.text))
		}
	}
	if nd.kind != nPad {
		t := p.next()
		if t.kind != tIdent {
			return p.errorf(t, false, "want a field name after %s, got %s", tt.text, describe(t))
		}
		if seen[t.text] {
			return p.errorf(t, false, "field %s declared twice", t.text)
		}
		seen[t.text] = true
		m.name = t.text
		if b := p.peek(); b.kind == tPunct && b.text == "[" {
			p.next()
			n, nt, err := p.parseInt("array length", MaxLayoutSize)
			if err != nil {
				return err
			}
			if e := p.next(); e.kind != tPunct || e.text != "]" {
				return p.errorf(e, false, "want ] after the array length, got %s", describe(e))
			}
			if nd.kind == nChar {
				nd.n, nd.size, nd.typ = n, n, fmt.Sprintf("char[%d]", n)
			} else {
				if n > MaxLayoutSize/nd.size {
					return p.errorf(nt, true, "array %s of %d x %d bytes exceeds %d bytes (MaxLayoutSize)",
						m.name, n, nd.size, MaxLayoutSize)
				}
				nd = &node{kind: nArray, elem: nd, n: n, fixed: nd.fixed, size: n * nd.size, typ: nd.typ}
			}
		} else if nd.kind == nChar {
			return p.errorf(t, false, "char needs a length: char %s[N]", m.name)
		}
		if b := p.peek(); b.kind == tPunct && b.text == "(" {
			p.next()
			unit, err := p.parseUnit(b)
			if err != nil {
				return err
			}
			leaf := nd
			if leaf.kind == nArray {
				leaf = leaf.elem
			}
			if leaf.kind != nScalar || leaf.prim == primBool {
				return p.errorf(b, false, "a unit needs a numeric field; %s is %s", m.name, leaf.typ)
			}
			m.unit = unit
		}
	}
	m.node = nd
	return p.addMember(st, m, tt)
}

func unknownType(name string) string {
	if _, ok := builtins[name+"le"]; ok {
		return fmt.Sprintf("%s needs a byte order: %sle or %sbe", name, name, name)
	}
	if len(name) > 2 {
		if b, ok := builtins[name[:len(name)-2]]; ok && b.size == 1 && b.kind == nScalar {
			return fmt.Sprintf("%s has no byte order: write %s", name, name[:len(name)-2])
		}
	}
	if name == "str" || name == "bytes" {
		return fmt.Sprintf("%s needs a length prefix: %s8, %s16le, %s32be...", name, name, name, name)
	}
	if !strings.ContainsAny(name, "0123456789") {
		return fmt.Sprintf("unknown type %s (a struct is declared before it is used)", name)
	}
	return fmt.Sprintf("unknown type %s", name)
}

// parseUnit reads a unit up to ")" on the same line.
func (p *parser) parseUnit(open token) (string, error) {
	s := p.pos
	for p.pos < len(p.src) && p.src[p.pos] != ')' && p.src[p.pos] != '\n' {
		p.pos++
	}
	if p.pos >= len(p.src) || p.src[p.pos] != ')' {
		return "", p.errorf(open, false, "unit not closed with ) on this line")
	}
	unit := strings.TrimSpace(string(p.src[s:p.pos]))
	p.pos++
	if unit == "" || len(unit) > 32 || !utf8.ValidString(unit) || strings.ContainsAny(unit, "\t\r\"\\#;") {
		return "", p.errorf(open, false, "bad unit %q: 1 to 32 bytes of UTF-8 without tabs, quotes, backslashes, # or ;", unit)
	}
	return unit, nil
}

// addMember appends m to st, keeping size, fixedness, leaf count and depth,
// and checks the bounds.
func (p *parser) addMember(st *structType, m member, at token) error {
	nd := m.node
	if len(st.members) == 0 {
		st.fixed = true
	}
	m.off = -1
	if st.fixed {
		m.off = st.size
	}
	if nd.size > MaxLayoutSize-st.size {
		return p.errorf(at, true, "%s: the layout exceeds %d bytes (MaxLayoutSize)", memberName(m), MaxLayoutSize)
	}
	leaves, depth, pathLen := 0, 0, len(m.name)
	for leaf := nd; ; leaf = leaf.elem {
		if leaf.kind == nStruct {
			leaves, depth = leaf.st.leaves, leaf.st.depth
			pathLen += 1 + leaf.st.pathLen
		} else if leaf.kind != nPad && leaf.kind != nArray {
			leaves = 1
		}
		if leaf.kind != nArray {
			break
		}
		pathLen += len("[]") + len(strconv.Itoa(leaf.n-1))
	}
	if pathLen > maxNameLen {
		return p.errorf(at, true, "%.60s: a path to its fields is %d bytes, more than %d", memberName(m), pathLen, maxNameLen)
	}
	if st.leaves+leaves > MaxFields {
		return p.errorf(at, true, "%s: more than %d leaf fields (MaxFields)", memberName(m), MaxFields)
	}
	if depth+1 > MaxDepth {
		return p.errorf(at, true, "%s: structs nest %d deep (MaxDepth %d)", memberName(m), depth+1, MaxDepth)
	}
	st.size += nd.size
	st.fixed = st.fixed && nd.fixed
	st.leaves += leaves
	st.depth = max(st.depth, depth+1)
	st.pathLen = max(st.pathLen, pathLen)
	st.members = append(st.members, m)
	return nil
}

func memberName(m member) string {
	if m.name == "" {
		return "pad"
	}
	return "field " + m.name
}
