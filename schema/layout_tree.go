package schema

// The shape of a compiled layout, for programs that bind a layout to their
// own types (package step's packed codec binds Go struct fields by name).

// LayoutKind is what a LayoutNode is.
type LayoutKind uint8

// Kinds of layout nodes.
const (
	LayoutScalar LayoutKind = iota + 1 // an integer, float or bool
	LayoutPad                          // pad N: N bytes, zero when written
	LayoutChar                         // char name[N]: N bytes of text, NUL-padded
	LayoutString                       // strN: a length prefix, then that many bytes of text
	LayoutBytes                        // bytesN: a length prefix, then that many bytes
	LayoutStruct                       // a struct type used as a field
	LayoutArray                        // elem[N]
)

// LayoutNode is the shape of one member's type.
type LayoutNode struct {
	Kind LayoutKind
	// Scalar is a LayoutScalar's kind: KindBool, KindInt, KindUint or
	// KindFloat.
	Scalar Kind
	// Size is the size in bytes of a scalar, of a pad or char field, or of
	// a string's or bytes' length prefix (1, 2 or 4).
	Size int
	// BigEndian is a scalar's or a length prefix's byte order.
	BigEndian bool
	// Len is an array's element count; Elem its element.
	Len  int
	Elem *LayoutNode
	// Members are a struct's members, pad included, in order.
	Members []LayoutMember
	// Type is the type as written: "f32le", "char[16]", "pose".
	Type string
}

// LayoutMember is one member of a layout's struct (or of the message
// itself).
type LayoutMember struct {
	Name string // "" for pad
	Unit string
	Node LayoutNode
}

// Members returns the message's members, pad included, in declaration
// order: the layout's whole shape. It is built at each call (a few
// allocations per member); the Layout keeps nothing of it.
func (l *Layout) Members() []LayoutMember { return structMembers(l.root) }

func structMembers(st *structType) []LayoutMember {
	out := make([]LayoutMember, len(st.members))
	for i, m := range st.members {
		out[i] = LayoutMember{Name: m.name, Unit: m.unit, Node: layoutNode(m.node)}
	}
	return out
}

func layoutNode(nd *node) LayoutNode {
	n := LayoutNode{Size: nd.size, BigEndian: nd.big, Type: nd.typ}
	switch nd.kind {
	case nScalar:
		n.Kind, n.Scalar, n.Size = LayoutScalar, nd.prim.kind(), primSize[nd.prim]
	case nPad:
		n.Kind, n.Size = LayoutPad, nd.n
	case nChar:
		n.Kind, n.Size = LayoutChar, nd.n
	case nStr:
		n.Kind = LayoutString
	case nBytes:
		n.Kind = LayoutBytes
	case nStruct:
		n.Kind, n.Members = LayoutStruct, structMembers(nd.st)
	case nArray:
		e := layoutNode(nd.elem)
		n.Kind, n.Len, n.Elem = LayoutArray, nd.n, &e
	}
	return n
}
