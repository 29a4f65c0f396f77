package scripts

import (
	"errors"

	lua "github.com/yuin/gopher-lua"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/schema"
)

// Fields by name: m.speed and m:f("wheel[2]") read a field of the
// message's type (Message.Type) by its path. A path is compiled once per
// type (schema.NewGetter: for a packed struct an offset) and kept; a read
// is then one map lookup and one load at that offset. Protobuf and JSON
// fields are found by scanning the message (schema.Getter); their values
// are kept for the rest of the callback, so reading m.x twice scans once.
//
// m.speed with a constant name would cost gopher-lua one allocation per
// read (it boxes the key to call __index), so, like the view fields
// (storeFields), the numeric fields of a packed type that the script names
// as string constants are stored in the view's methods table before each
// on_message: one load at a compiled offset each. Names the view already
// has (topic, ts, gen_ts, seq, size, the methods) are never shadowed: such
// a field is read with m:f("size").

// Bounds on what a rule caches: a script building paths at run time
// (m:f("w" .. i)) or a topic whose producer changes type over and over
// cannot grow the cache without bound; past them paths are compiled on
// every read instead.
const (
	maxCachedPaths = 1024 // per type
	maxCachedTypes = 64
	maxUsedNames   = 256 // string constants considered as field names
)

// typeFields is what a rule knows of one type: its decoder (or why it has
// none) and the paths compiled so far.
type typeFields struct {
	dec    schema.Decoder
	err    error
	packed bool
	paths  map[string]*fieldGetter
	// et is the rule's event time on this type (TimeEvent), compiled
	// once; etDone says it was tried (et nil: the type does not hold it)
	et     *schema.EventTime
	etDone bool
	// stored are the fields storeTyped sets before each on_message (nil
	// until computed, for packed types only)
	stored []storedField
	staged bool
}

// storedField is a numeric field of a packed type the script names.
type storedField struct {
	name   string
	g      *schema.Getter
	isBool bool
}

// noteName records a string constant of the script that may name a field
// (an identifier the view does not already answer to).
func (r *Rule) noteName(s string) {
	if len(r.usedNames) >= maxUsedNames || !isIdent(s) || r.methods.RawGetString(s) != lua.LNil {
		return
	}
	for _, n := range r.usedNames {
		if n == s {
			return
		}
	}
	r.usedNames = append(r.usedNames, s)
}

func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// storeTyped sets, in the methods table, the named numeric fields of m's
// packed type (nil where m is too short: m.x then reaches viewField, which
// raises the error), after clearing those of the previous type.
func (r *Rule) storeTyped(m *Message) {
	if m.Type != r.storedType || !r.storedSet {
		for _, sf := range r.storedList {
			r.methods.RawSetString(sf.name, lua.LNil)
		}
		r.storedList, r.storedType, r.storedSet = nil, m.Type, true
		if m.Type != nil {
			tf := r.fieldsOf(m.Type)
			if !tf.staged {
				tf.staged = true
				if tf.err == nil && tf.packed {
					for _, n := range r.usedNames {
						fg := tf.getter(n)
						if fg.err == nil && fg.g.Field().Kind.Numeric() {
							tf.stored = append(tf.stored, storedField{name: n, g: fg.g, isBool: fg.g.Field().Kind == schema.KindBool})
						}
					}
				}
			}
			r.storedList = tf.stored
		}
	}
	if len(r.storedList) == 0 {
		return
	}
	data, ok := r.data(m)
	if !ok {
		return // Feed skips the message
	}
	for _, sf := range r.storedList {
		v, ok := sf.g.Get(data)
		var lv lua.LValue = lua.LNil
		switch {
		case !ok:
		case sf.isBool:
			lv = lua.LBool(v.Num != 0)
		default:
			lv = r.nums.box(v.Num)
		}
		r.methods.RawSetString(sf.name, lv)
	}
}

// fieldGetter is one compiled path: its getter or why it does not compile,
// and for protobuf and JSON the value read in the current callback.
type fieldGetter struct {
	g   *schema.Getter
	err error
	gen uint64 // st.messages when v was read
	v   lua.LValue
}

// fieldsOf returns what the rule knows of typ, building it the first time.
// A Type pointer identifies one type for as long as messages carry it
// (Message.Type).
func (r *Rule) fieldsOf(typ *ingest.Type) *typeFields {
	if tf := r.types[typ]; tf != nil {
		return tf
	}
	if r.types == nil || len(r.types) >= maxCachedTypes {
		r.types = map[*ingest.Type]*typeFields{}
	}
	tf := &typeFields{paths: map[string]*fieldGetter{}}
	switch {
	case typ == nil || typ.MessageEncoding == "" || typ.MessageEncoding == ingest.EncodingRaw:
		tf.err = errRawTopic
	default:
		tf.dec, tf.err = schema.NewDecoder(*typ)
		tf.packed = typ.MessageEncoding == ingest.EncodingPacked
	}
	r.types[typ] = tf
	return tf
}

var errRawTopic = errors.New("the topic is raw bytes, it declares no schema: read it by offset (m:f32le(0)) or give it a type (docs/schemas.md)")

// getter returns the compiled path of tf.
func (tf *typeFields) getter(path string) *fieldGetter {
	if fg := tf.paths[path]; fg != nil {
		return fg
	}
	fg := &fieldGetter{}
	fg.g, fg.err = schema.NewGetter(tf.dec, path)
	if len(tf.paths) < maxCachedPaths {
		tf.paths[path] = fg
	}
	return fg
}

// field reads path from the current message; method says how the script
// asked (m:f(path) or m.path), for error messages. It raises an error naming the topic when the
// type has no such field or a packed message is too short for it. A
// protobuf or JSON message that does not hold the field reads as nil.
func (r *Rule) field(L *lua.LState, path string, method bool) lua.LValue {
	// built only when needed: a concatenation allocates
	expr := func() string {
		if method {
			return "m:f(\"" + path + "\")"
		}
		return "m." + path
	}
	m := r.message(L)
	tf := r.curFields
	if m.Type != r.curType || tf == nil {
		tf = r.fieldsOf(m.Type)
		r.curType, r.curFields = m.Type, tf
	}
	if tf.err != nil {
		L.RaiseError("%s: topic %s: %v", expr(), m.Topic, tf.err)
	}
	fg := tf.getter(path)
	if fg.err != nil {
		L.RaiseError("%s: topic %s (%s): %v", expr(), m.Topic, m.Type.Schema.Name, fg.err)
	}
	gen := r.st.messages.Load()
	if !tf.packed && fg.v != nil && fg.gen == gen {
		return fg.v
	}
	data := r.payload(L)
	v, ok := fg.g.Get(data)
	var out lua.LValue
	switch {
	case !ok && tf.packed:
		L.RaiseError("%s: topic %s: message of %d bytes is too short for field %s (%s)", expr(), m.Topic, len(data), path, fg.g.Field().Type)
	case !ok:
		out = lua.LNil
	case v.Kind == schema.KindBool:
		out = lua.LBool(v.Num != 0)
	case v.Kind == schema.KindString || v.Kind == schema.KindBytes:
		r.meter.charge(L, "m:f", len(v.Bytes))
		out = lua.LString(v.Bytes)
	default:
		out = r.nums.box(v.Num)
	}
	if !tf.packed {
		fg.gen, fg.v = gen, out
	}
	return out
}

// eventTime is m's event time for a TimeEvent rule: the rule's event_time
// field of m's type, compiled once per type. A type that does not hold it
// is logged once (naming topic and cause) and its messages take the
// producer's or the capture time.
func (r *Rule) eventTime(m *Message) (int64, bool) {
	if m.Type == nil {
		return 0, false
	}
	tf := r.fieldsOf(m.Type)
	if !tf.etDone {
		tf.etDone = true
		if tf.err == nil {
			var err error
			if tf.et, err = schema.NewEventTime(*m.Type, r.decl.EventTime, r.decl.EventTimeUnit); err != nil {
				r.logger.Warn("rule event time not readable: producer or capture time used", "rule", r.decl.Name,
					"topic", m.Topic, "event_time", r.decl.EventTime, "err", err)
			}
		}
	}
	if tf.et == nil {
		return 0, false
	}
	data, ok := r.data(m)
	if !ok {
		return 0, false // Feed skips the message
	}
	return tf.et.Ns(data)
}
