package can

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"go.einride.tech/can/pkg/dbc"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/defaults"
)

// ErrDBC is wrapped by every error of ParseDBC.
var ErrDBC = errors.New("can: bad DBC")

// Field kinds of a decoded signal.
const (
	kindF64 = iota // physical value, NaN when a multiplexed signal is absent
	kindI64        // raw = physical (factor 1, offset 0), signed
	kindU64        // likewise, unsigned
)

// maxLabel bounds a value label field (bytes).
const maxLabel = 32

// DBC is a parsed DBC file: the messages it defines, each compiled to a
// decoder and to the type of its topic. A DBC is read-only once made and
// safe for concurrent use.
type DBC struct {
	Name     string // the file, for messages
	Messages []*Message
	byKey    map[uint32]*Message
}

// Message is one DBC message: its frame ID, name and size, its signals,
// and the type of the topic it is decoded to (a packed struct, Layout).
type Message struct {
	ID       uint32
	Extended bool
	Name     string
	Size     int // bytes a frame must carry at least
	Signals  []*Signal
	Layout   string
	Type     ingest.Type
	size     int // encoded bytes
	mux      *Signal
}

// Signal is one signal of a message, compiled.
type Signal struct {
	Name              string
	Start, Len        int
	BigEndian, Signed bool
	Float             int // 0, or 32 / 64 for an IEEE float signal
	Factor, Offset    float64
	Unit              string
	Switch            bool   // the message's multiplexer switch
	Multiplexed       bool   // present only when the switch is MuxValue
	MuxValue          uint64 //
	Labels            []Label

	kind     int
	lo       int
	shift    uint
	mask     uint64
	slow     bool
	off      int
	labelOff int
	labelLen int
}

// Label is a value table entry: a raw value and its name.
type Label struct {
	Value int64
	Name  string
}

func key(id uint32, ext bool) uint32 {
	if ext {
		return id | 1<<31
	}
	return id
}

// Lookup returns the message of a frame's ID, or nil.
func (d *DBC) Lookup(f *Frame) *Message {
	return d.byKey[key(f.ID, f.Flags&Extended != 0)]
}

// ParseDBC parses a DBC file (name labels errors) with go.einride.tech/can's
// parser and compiles its messages. What it does not support is an error
// naming the file, line and what (docs/can.md, "DBC").
func ParseDBC(name string, data []byte) (d *DBC, err error) {
	if len(data) > defaults.CANMaxDBCBytes {
		return nil, fmt.Errorf("%w: %s: %d bytes, more than %d", ErrDBC, name, len(data), defaults.CANMaxDBCBytes)
	}
	defer func() { // the parser panics on what it does not foresee
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("%w: %s: the parser failed: %v", ErrDBC, name, r)
		}
	}()
	p := dbc.NewParser(name, stripAttributes(data))
	if perr := p.Parse(); perr != nil {
		return nil, fmt.Errorf("%w: %s:%d:%d: %s", ErrDBC, name, perr.Position().Line, perr.Position().Column, perr.Reason())
	}
	return compile(name, p.Defs())
}

// stripAttributes blanks the attribute values (BA_, BA_DEF_DEF_ and their
// _REL_ forms) of a DBC, keeping its lines: edr-lite uses none, and the
// parser looks each one's definition up among all definitions before it,
// which a file of many undefined ones makes quadratic.
func stripAttributes(data []byte) []byte {
	out := slices.Clone(data)
	inString, lineStart := false, true
	blank := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			if c == '\\' && i+1 < len(out) && out[i+1] == '"' {
				if blank {
					out[i], out[i+1] = ' ', ' '
				}
				i++
				continue
			}
			if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == ';' && blank:
			out[i] = ' '
			blank = false
			continue
		case lineStart && !blank:
			for _, kw := range []string{"BA_ ", "BA_DEF_DEF_ ", "BA_REL_ ", "BA_DEF_DEF_REL_ "} {
				if strings.HasPrefix(string(out[i:min(len(out), i+len(kw))]), kw) {
					blank = true
					break
				}
			}
		}
		lineStart = c == '\n' || (lineStart && (c == ' ' || c == '\t'))
		if blank && c != '\n' && c != '\r' {
			out[i] = ' '
		}
	}
	return out
}

func compile(name string, defs []dbc.Def) (*DBC, error) {
	d := &DBC{Name: name, byKey: map[uint32]*Message{}}
	bad := func(line int, format string, a ...any) error {
		return fmt.Errorf("%w: %s:%d: %s", ErrDBC, name, line, fmt.Sprintf(format, a...))
	}
	sigs := map[string]*Signal{} // "id/name"
	for _, def := range defs {
		switch def := def.(type) {
		case *dbc.MessageDef:
			if dbc.IsIndependentSignalsMessage(def) {
				continue
			}
			m := &Message{ID: def.MessageID.ToCAN(), Extended: def.MessageID.IsExtended(), Name: string(def.Name), Size: int(def.Size)}
			if m.Size > 64 {
				return nil, bad(def.Pos.Line, "message %s: %d bytes (a CAN FD frame holds 64)", m.Name, m.Size)
			}
			if m.Name == strings.TrimPrefix(defaults.CANErrorSuffix, "/") {
				return nil, bad(def.Pos.Line, "message %s: the name of the error frames' topic", m.Name)
			}
			k := key(m.ID, m.Extended)
			if d.byKey[k] != nil {
				return nil, bad(def.Pos.Line, "message %s: ID %#x is %s's too", m.Name, m.ID, d.byKey[k].Name)
			}
			for i := range def.Signals {
				sd := &def.Signals[i]
				s := &Signal{Name: string(sd.Name), Start: int(sd.StartBit), Len: int(sd.Size), BigEndian: sd.IsBigEndian,
					Signed: sd.IsSigned, Factor: sd.Factor, Offset: sd.Offset, Unit: sd.Unit,
					Switch: sd.IsMultiplexerSwitch, Multiplexed: sd.IsMultiplexed, MuxValue: sd.MultiplexerSwitch}
				if sigs[fmt.Sprint(k, "/", s.Name)] != nil {
					return nil, bad(sd.Pos.Line, "signal %s of %s defined twice", s.Name, m.Name)
				}
				if s.Switch {
					if m.mux != nil {
						return nil, bad(sd.Pos.Line, "message %s: a second multiplexer switch %s", m.Name, s.Name)
					}
					m.mux = s
				}
				sigs[fmt.Sprint(k, "/", s.Name)] = s
				m.Signals = append(m.Signals, s)
			}
			d.byKey[k] = m
			d.Messages = append(d.Messages, m)
		case *dbc.SignalValueTypeDef:
			k := key(def.MessageID.ToCAN(), def.MessageID.IsExtended())
			s := sigs[fmt.Sprint(k, "/", def.SignalName)]
			if s == nil {
				return nil, bad(def.Pos.Line, "SIG_VALTYPE_ of an unknown signal %s", def.SignalName)
			}
			switch def.SignalValueType {
			case dbc.SignalValueTypeFloat32:
				s.Float = 32
			case dbc.SignalValueTypeFloat64:
				s.Float = 64
			}
		case *dbc.ValueDescriptionsDef:
			if def.ObjectType != dbc.ObjectTypeSignal {
				continue
			}
			k := key(def.MessageID.ToCAN(), def.MessageID.IsExtended())
			s := sigs[fmt.Sprint(k, "/", def.SignalName)]
			if s == nil {
				return nil, bad(def.Pos.Line, "VAL_ of an unknown signal %s", def.SignalName)
			}
			s.Labels = s.Labels[:0]
			for _, v := range def.ValueDescriptions {
				if v.Value != math.Trunc(v.Value) || math.Abs(v.Value) > 1<<63 {
					return nil, bad(v.Pos.Line, "signal %s: value %v of a value table is not an integer", s.Name, v.Value)
				}
				s.Labels = append(s.Labels, Label{Value: int64(v.Value), Name: v.Description})
			}
			slices.SortStableFunc(s.Labels, func(a, b Label) int {
				switch {
				case a.Value < b.Value:
					return -1
				case a.Value > b.Value:
					return 1
				}
				return 0
			})
		case *dbc.UnknownDef:
			if def.Keyword == "SG_MUL_VAL_" {
				return nil, bad(def.Pos.Line, "extended multiplexing (SG_MUL_VAL_) is not supported")
			}
		}
	}
	for _, m := range d.Messages {
		if err := m.build(); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrDBC, name, err)
		}
	}
	return d, nil
}

// unitOf makes a DBC unit a layout unit: at most 32 bytes, without the
// characters the layout language keeps for itself.
func unitOf(u string) string {
	u = strings.Map(func(r rune) rune {
		if r == '\t' || r == '"' || r == '\\' || r == '#' || r == ';' || r == ')' || r == '(' || r == '\n' || r == '\r' || r == utf8.RuneError {
			return -1
		}
		return r
	}, u)
	u = strings.TrimSpace(u)
	for len(u) > 32 {
		_, n := utf8.DecodeLastRuneInString(u)
		u = u[:len(u)-n]
	}
	return strings.TrimSpace(u)
}

// build checks m's signals, compiles their extraction and writes the
// layout of the message's topic.
func (m *Message) build() error {
	var lay strings.Builder
	fmt.Fprintf(&lay, "# %s (ID %#x", m.Name, m.ID)
	if m.Extended {
		lay.WriteString(", extended")
	}
	lay.WriteString("), decoded from a DBC\n")
	names := map[string]bool{}
	off := 0
	for _, s := range m.Signals {
		where := fmt.Sprintf("message %s, signal %s", m.Name, s.Name)
		switch {
		case s.Len < 1 || s.Len > 64:
			return fmt.Errorf("%s: %d bits (1..64)", where, s.Len)
		case s.Float == 32 && s.Len != 32, s.Float == 64 && s.Len != 64:
			return fmt.Errorf("%s: a float%d signal of %d bits", where, s.Float, s.Len)
		case s.Factor == 0 || math.IsNaN(s.Factor) || math.IsInf(s.Factor, 0) || math.IsNaN(s.Offset) || math.IsInf(s.Offset, 0):
			return fmt.Errorf("%s: factor %v, offset %v", where, s.Factor, s.Offset)
		case s.Multiplexed && m.mux == nil:
			return fmt.Errorf("%s: multiplexed, but the message has no multiplexer switch", where)
		}
		if err := s.compile(m.Size); err != nil {
			return fmt.Errorf("%s: %v", where, err)
		}
		s.kind = kindF64
		if s.Float == 0 && s.Factor == 1 && s.Offset == 0 && !s.Multiplexed {
			s.kind = kindU64
			if s.Signed {
				s.kind = kindI64
			}
		}
		typ := [...]string{"f64le", "i64le", "u64le"}[s.kind]
		if names[s.Name] {
			return fmt.Errorf("%s: a field of that name exists", where)
		}
		names[s.Name] = true
		s.off = off
		off += 8
		fmt.Fprintf(&lay, "%s %s", typ, s.Name)
		if u := unitOf(s.Unit); u != "" {
			fmt.Fprintf(&lay, " (%s)", u)
		}
		lay.WriteString("\n")
		if len(s.Labels) > 0 {
			n := 1
			for _, l := range s.Labels {
				n = max(n, min(len(l.Name), maxLabel))
			}
			ln := s.Name + "_label"
			if names[ln] {
				return fmt.Errorf("%s: a field named %s exists", where, ln)
			}
			names[ln] = true
			s.labelOff, s.labelLen = off, n
			off += n
			fmt.Fprintf(&lay, "char %s[%d]\n", ln, n)
		}
	}
	if len(m.Signals) == 0 {
		return fmt.Errorf("message %s has no signal", m.Name)
	}
	m.size = off
	m.Layout = lay.String()
	m.Type = ingest.Packed("dbc."+m.Name, m.Layout)
	return nil
}

// compile checks that s fits a message of size bytes and computes how it
// is read: an 8-byte load at byte lo, a shift and a mask (slow: bit by
// bit, for a signal spanning 9 bytes).
func (s *Signal) compile(size int) error {
	n := s.Len
	s.mask = math.MaxUint64
	if n < 64 {
		s.mask = 1<<uint(n) - 1
	}
	if !s.BigEndian {
		if s.Start+n > size*8 {
			return fmt.Errorf("bits %d..%d beyond the message's %d bytes", s.Start, s.Start+n-1, size)
		}
		s.lo, s.shift = s.Start/8, uint(s.Start%8)
		s.slow = int(s.shift)+n > 64
		return nil
	}
	pm := s.Start/8*8 + 7 - s.Start%8 // the MSB in big-endian bit order
	pl := pm + n - 1
	if s.Start >= size*8 || pl >= size*8 {
		return fmt.Errorf("start bit %d and %d bits (Motorola) beyond the message's %d bytes", s.Start, n, size)
	}
	s.lo = pm / 8
	s.shift = uint(63 - (pl - s.lo*8))
	s.slow = pl-s.lo*8 > 63
	return nil
}

// raw reads s's raw bits from buf (a message's data, zero-padded to 72
// bytes).
func (s *Signal) raw(buf *[72]byte) uint64 {
	if s.slow {
		return s.rawSlow(buf)
	}
	if s.BigEndian {
		return binary.BigEndian.Uint64(buf[s.lo:]) >> s.shift & s.mask
	}
	return binary.LittleEndian.Uint64(buf[s.lo:]) >> s.shift & s.mask
}

func (s *Signal) rawSlow(buf *[72]byte) uint64 {
	var v uint64
	if s.BigEndian {
		pm := s.Start/8*8 + 7 - s.Start%8
		for p := pm; p < pm+s.Len; p++ {
			v = v<<1 | uint64(buf[p/8]>>(7-p%8)&1)
		}
		return v
	}
	for i := s.Len - 1; i >= 0; i-- {
		p := s.Start + i
		v = v<<1 | uint64(buf[p/8]>>(p%8)&1)
	}
	return v
}

// value returns s's value from its raw bits: the physical value as a
// float64, and the raw value as an int64 (sign-extended when signed).
func (s *Signal) value(raw uint64) (float64, int64) {
	iv := int64(raw)
	if s.Signed && s.Len < 64 && raw>>(uint(s.Len)-1)&1 != 0 {
		iv = int64(raw | ^s.mask)
	}
	switch s.Float {
	case 32:
		return float64(math.Float32frombits(uint32(raw)))*s.Factor + s.Offset, iv
	case 64:
		return math.Float64frombits(raw)*s.Factor + s.Offset, iv
	}
	if s.Signed {
		return float64(iv)*s.Factor + s.Offset, iv
	}
	return float64(raw)*s.Factor + s.Offset, iv
}

func (s *Signal) label(raw int64) string {
	i, ok := slices.BinarySearchFunc(s.Labels, raw, func(l Label, v int64) int {
		switch {
		case l.Value < v:
			return -1
		case l.Value > v:
			return 1
		}
		return 0
	})
	if !ok {
		return ""
	}
	return s.Labels[i].Name
}

// EncodedSize is the size of a decoded message (its topic's messages).
func (m *Message) EncodedSize() int { return m.size }

// Decode decodes frame f's data as m into dst (at least EncodedSize
// bytes) and reports whether f carries the message's bytes (a shorter
// frame is not decoded). It allocates nothing.
func (m *Message) Decode(dst []byte, f *Frame) bool {
	if int(f.Len) < m.Size || len(dst) < m.size {
		return false
	}
	var buf [72]byte
	copy(buf[:], f.Data[:f.Len])
	var sw uint64
	if m.mux != nil {
		sw = m.mux.raw(&buf)
	}
	le := binary.LittleEndian
	for _, s := range m.Signals {
		if s.Multiplexed && s.MuxValue != sw {
			le.PutUint64(dst[s.off:], math.Float64bits(math.NaN()))
			if s.labelLen > 0 {
				clear(dst[s.labelOff : s.labelOff+s.labelLen])
			}
			continue
		}
		raw := s.raw(&buf)
		phys, iv := s.value(raw)
		switch s.kind {
		case kindF64:
			le.PutUint64(dst[s.off:], math.Float64bits(phys))
		case kindI64:
			le.PutUint64(dst[s.off:], uint64(iv))
		default:
			le.PutUint64(dst[s.off:], raw)
		}
		if s.labelLen > 0 {
			l := dst[s.labelOff : s.labelOff+s.labelLen]
			clear(l[copy(l, s.label(iv)):])
		}
	}
	return true
}

// LoadDBC reads and parses the DBC file at path (at most
// defaults.CANMaxDBCBytes; a larger one is refused before it is parsed).
func LoadDBC(path string) (*DBC, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, defaults.CANMaxDBCBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ParseDBC(path, b)
}
