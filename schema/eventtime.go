package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Units of an event-time field (NewEventTime).
const (
	UnitNs = "ns"
	UnitUs = "us"
	UnitMs = "ms"
	UnitS  = "s"
	// UnitStamp: the field is a struct or message of whole seconds and
	// nanoseconds, like ROS's time and builtin_interfaces/Time, Foxglove's
	// time and google.protobuf.Timestamp. The seconds member is the first
	// of stampSec present, the nanoseconds one the first of stampNsec.
	UnitStamp = "stamp"
)

var (
	stampSec  = []string{"sec", "secs", "seconds"}
	stampNsec = []string{"nsec", "nsecs", "nanosec", "nanos", "nanoseconds"}
	unitScale = map[string]int64{UnitNs: 1, UnitUs: 1e3, UnitMs: 1e6, UnitS: 1e9}
)

// EventTime extracts the time a message says it describes (the sensor's
// stamp, not when edr-lite captured it) as int64 nanoseconds since the UNIX
// epoch. Build one per topic with NewEventTime.
//
// An EventTime is immutable and safe for concurrent use.
type EventTime struct {
	scale int64 // ns per unit; 0 for UnitStamp
	// packed
	acc, nsec *Accessor
	// protobuf: wire-level paths to the value (or to sec and nsec)
	pb, pbNsec []pbStep
	// json
	elems []pathElem
}

// NewEventTime compiles an event-time field of a topic: path in the field
// path syntax ("header.stamp", "t_ns") and unit one of UnitNs, UnitUs,
// UnitMs, UnitS (a number: integer or float) or UnitStamp. For a packed
// layout unit may be "" when the field declares its unit ("u64le t (ns)").
//
// Ns costs, per message: packed, one Accessor read (no allocation);
// protobuf, a scan of the wire bytes along the path (no decode, no
// allocation); json, a validation and a scan of the text.
func NewEventTime(t Type, path, unit string) (*EventTime, error) {
	if err := CheckEventTimeUnit(unit); err != nil {
		return nil, err
	}
	elems, err := parsePath(path)
	if err != nil {
		return nil, err
	}
	d, err := NewDecoder(t)
	if err != nil {
		return nil, err
	}
	e := &EventTime{scale: unitScale[unit]}
	switch d := d.(type) {
	case *Layout:
		err = e.packed(d, path, unit)
	case *protoDecoder:
		if unit == "" {
			return nil, fmt.Errorf("%w: event time %q: say the unit (ns, us, ms, s or stamp)", ErrNoField, path)
		}
		err = e.protobuf(d.md, elems, unit)
	case *jsonDecoder:
		if unit == "" {
			return nil, fmt.Errorf("%w: event time %q: say the unit (ns, us, ms, s or stamp)", ErrNoField, path)
		}
		e.elems = elems
	default:
		panic("BUG: schema: event time for an unknown decoder")
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

// CheckEventTimeUnit reports whether NewEventTime takes unit: one of
// UnitNs, UnitUs, UnitMs, UnitS, UnitStamp, or "" (a packed field's own).
func CheckEventTimeUnit(unit string) error {
	if unit != "" && unit != UnitStamp && unitScale[unit] == 0 {
		return fmt.Errorf("%w: event time unit %q: want ns, us, ms, s or stamp", ErrNoField, unit)
	}
	return nil
}

func (e *EventTime) packed(l *Layout, path, unit string) error {
	if unit == UnitStamp {
		var err error
		if e.acc, err = stampAccessor(l, path, stampSec); err != nil {
			return err
		}
		e.nsec, err = stampAccessor(l, path, stampNsec)
		return err
	}
	a, err := l.Accessor(path)
	if err != nil {
		return err
	}
	f := a.Field()
	if !f.Kind.Numeric() || f.Kind == KindBool {
		return fmt.Errorf("%w: event time %q is %s, not a number", ErrNoField, path, f.Type)
	}
	if unit == "" {
		if e.scale = unitScale[f.Unit]; e.scale == 0 {
			return fmt.Errorf("%w: event time %q: unit %q is not a time unit (ns, us, ms, s); say one", ErrNoField, path, f.Unit)
		}
	}
	e.acc = a
	return nil
}

func stampAccessor(l *Layout, path string, names []string) (*Accessor, error) {
	for _, n := range names {
		if a, err := l.Accessor(path + "." + n); err == nil {
			if k := a.Field().Kind; k == KindInt || k == KindUint {
				return a, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: event time %q: a stamp needs an integer member named one of %q", ErrNoField, path, names)
}

// Ns returns the event time of msg in nanoseconds since the UNIX epoch;
// false when the message does not hold it (too short, absent, malformed) or
// it does not fit in an int64. Floats are rounded to the nanosecond (a
// float64 of seconds near today resolves about 0.2 µs).
func (e *EventTime) Ns(msg []byte) (int64, bool) {
	switch {
	case e.acc != nil:
		if e.nsec != nil {
			s, ok1 := e.acc.Int64(msg)
			n, ok2 := e.nsec.Int64(msg)
			return stampNs(s, n, ok1 && ok2)
		}
		if e.acc.prim == primF32 || e.acc.prim == primF64 {
			f, ok := e.acc.Float64(msg)
			return floatNs(f, e.scale, ok)
		}
		if v, ok := e.acc.Int64(msg); ok {
			return intNs(v, e.scale)
		}
		return 0, false
	case e.pb != nil:
		if e.pbNsec != nil {
			s, ok1 := pbLookup(msg, e.pb, 0)
			n, ok2 := pbLookup(msg, e.pbNsec, 0)
			si, ok3 := s.int64()
			ni, ok4 := n.int64()
			return stampNs(si, ni, ok1 && ok2 && ok3 && ok4)
		}
		v, ok := pbLookup(msg, e.pb, 0)
		if !ok {
			return 0, false
		}
		if v.kind == KindFloat {
			return floatNs(v.f, e.scale, true)
		}
		i, ok := v.int64()
		if !ok {
			return 0, false
		}
		return intNs(i, e.scale)
	}
	return e.jsonNs(msg)
}

func stampNs(sec, nsec int64, ok bool) (int64, bool) {
	if !ok {
		return 0, false
	}
	ns, ok := intNs(sec, 1e9)
	if !ok || (nsec > 0 && ns > math.MaxInt64-nsec) || (nsec < 0 && ns < math.MinInt64-nsec) {
		return 0, false
	}
	return ns + nsec, true
}

func intNs(v, scale int64) (int64, bool) {
	if v > math.MaxInt64/scale || v < math.MinInt64/scale {
		return 0, false
	}
	return v * scale, true
}

func floatNs(f float64, scale int64, ok bool) (int64, bool) {
	f = math.Round(f * float64(scale))
	if !ok || math.IsNaN(f) || f >= 1<<63 || f < -(1<<63) {
		return 0, false
	}
	return int64(f), true
}

func (e *EventTime) jsonNs(msg []byte) (int64, bool) {
	if checkObject(msg) != nil {
		return 0, false
	}
	w := jsonWalker{s: msg}
	raw, ok := w.lookup(e.elems)
	if !ok {
		return 0, false
	}
	if e.scale != 0 {
		return jsonNumberNs(raw, e.scale)
	}
	if len(raw) > 0 && raw[0] == '"' { // protojson writes a Timestamp as RFC 3339
		s, _ := unquoteJSON(raw)
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, false
		}
		return stampNs(t.Unix(), int64(t.Nanosecond()), true)
	}
	var sec, nsec int64
	for i, names := range [][]string{stampSec, stampNsec} {
		found := false
		for _, n := range names {
			elems := append(e.elems[:len(e.elems):len(e.elems)], pathElem{name: n})
			if raw, ok := w.lookup(elems); ok {
				v, err := strconv.ParseInt(string(raw), 10, 64)
				if err != nil {
					return 0, false
				}
				if i == 0 {
					sec = v
				} else {
					nsec = v
				}
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
	return stampNs(sec, nsec, true)
}

func jsonNumberNs(raw []byte, scale int64) (int64, bool) {
	s := string(raw)
	if len(s) > 1 && s[0] == '"' { // protojson writes 64-bit integers as strings
		var err error
		if s, err = strconv.Unquote(s); err != nil {
			return 0, false
		}
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return intNs(v, scale)
	}
	// Only JSON number syntax: ParseFloat would also take "Inf" or "0x1p4".
	if s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9') || !json.Valid([]byte(s)) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return floatNs(f, scale, err == nil)
}

// protobuf compiles the path to wire-level steps.
func (e *EventTime) protobuf(md protoreflect.MessageDescriptor, elems []pathElem, unit string) error {
	steps, fd, err := pbCompile(md, elems)
	if err != nil {
		return err
	}
	if unit != UnitStamp {
		if k := protoKind(fd.Kind()); !k.Numeric() || k == KindBool {
			return fmt.Errorf("%w: event time %q is %s, not a number", ErrNoField, pathString(elems), fd.Kind())
		}
		e.pb = steps
		return nil
	}
	if fd.Message() == nil || fd.IsList() {
		return fmt.Errorf("%w: event time %q: a stamp is a message with seconds and nanoseconds", ErrNoField, pathString(elems))
	}
	for i, names := range [][]string{stampSec, stampNsec} {
		var sub protoreflect.FieldDescriptor
		for _, n := range names {
			if f := fd.Message().Fields().ByName(protoreflect.Name(n)); f != nil && !f.IsList() &&
				(protoKind(f.Kind()) == KindInt || protoKind(f.Kind()) == KindUint) {
				sub = f
				break
			}
		}
		if sub == nil {
			return fmt.Errorf("%w: event time %q: %s has no integer field named one of %q",
				ErrNoField, pathString(elems), fd.Message().FullName(), names)
		}
		s := append(slices.Clone(steps), newPBStep(sub))
		if i == 0 {
			e.pb = s
		} else {
			e.pbNsec = s
		}
	}
	return nil
}
