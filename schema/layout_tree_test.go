package schema

import (
	"fmt"
	"strings"
	"testing"
)

// TestLayoutMembers: the shape Members gives is the layout's, member by
// member, pad included, nested structs and arrays expanded.
func TestLayoutMembers(t *testing.T) {
	l := MustParseLayout(`struct pose { f64le x (m); f32be yaw }
u8 gear; pad 3; i16be wheel[4] (rpm); char vin[8]; str16le note; bytes8 blob; pose p; pose ps[2]; bool ok`)
	var b strings.Builder
	var walk func(prefix string, ms []LayoutMember)
	var node func(path string, n LayoutNode)
	node = func(path string, n LayoutNode) {
		fmt.Fprintf(&b, "%s kind=%d scalar=%v size=%d big=%v len=%d type=%s\n", path, n.Kind, n.Scalar, n.Size, n.BigEndian, n.Len, n.Type)
		switch n.Kind {
		case LayoutStruct:
			walk(path+".", n.Members)
		case LayoutArray:
			node(path+"[]", *n.Elem)
		}
	}
	walk = func(prefix string, ms []LayoutMember) {
		for _, m := range ms {
			node(prefix+m.Name+"("+m.Unit+")", m.Node)
		}
	}
	walk("", l.Members())
	want := `gear() kind=1 scalar=uint size=1 big=false len=0 type=u8
() kind=2 scalar=invalid size=3 big=false len=0 type=pad 3
wheel(rpm) kind=7 scalar=invalid size=8 big=false len=4 type=i16be
wheel(rpm)[] kind=1 scalar=int size=2 big=true len=0 type=i16be
vin() kind=3 scalar=invalid size=8 big=false len=0 type=char[8]
note() kind=4 scalar=invalid size=2 big=false len=0 type=str16le
blob() kind=5 scalar=invalid size=1 big=false len=0 type=bytes8
p() kind=6 scalar=invalid size=12 big=false len=0 type=pose
p().x(m) kind=1 scalar=float size=8 big=false len=0 type=f64le
p().yaw() kind=1 scalar=float size=4 big=true len=0 type=f32be
ps() kind=7 scalar=invalid size=24 big=false len=2 type=pose
ps()[] kind=6 scalar=invalid size=12 big=false len=0 type=pose
ps()[].x(m) kind=1 scalar=float size=8 big=false len=0 type=f64le
ps()[].yaw() kind=1 scalar=float size=4 big=true len=0 type=f32be
ok() kind=1 scalar=bool size=1 big=false len=0 type=bool
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
