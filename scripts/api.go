package scripts

import (
	"fmt"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// installAPI defines the globals a rule sees: rule, param, params, trigger,
// log, now; and builds the message view.
func (r *Rule) installAPI() {
	L := r.L
	L.SetGlobal("rule", L.NewFunction(r.luaRule))
	L.SetGlobal("param", L.NewFunction(r.luaParam))
	L.SetGlobal("trigger", L.NewFunction(r.luaTrigger))
	L.SetGlobal("log", L.NewFunction(r.luaLog))
	L.SetGlobal("now", L.NewFunction(func(L *lua.LState) int {
		L.Push(r.nums.box(float64(r.now)))
		return 1
	}))

	// params: a read-only proxy over the configured strings; a name read
	// while the file loads counts as declared (params.pre: an optional
	// param, nil when not configured)
	raw := L.NewTable()
	for k, v := range r.opts.Params {
		raw.RawSetString(k, lua.LString(v))
	}
	params := L.NewTable()
	pmt := L.NewTable()
	pmt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		k := L.Get(2)
		if s, ok := k.(lua.LString); ok && r.loading {
			r.paramSet[string(s)] = true
			if v, ok := r.opts.Params[string(s)]; ok {
				r.decl.Params[string(s)] = v
			}
		}
		L.Push(raw.RawGet(k))
		return 1
	}))
	pmt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("params is read-only")
		return 0
	}))
	pmt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(params, pmt)
	L.SetGlobal("params", params)

	r.view = r.newView()
}

var ruleFields = "name, topics, pre, post, time, event_time, event_time_unit, cooldown, max_per_minute, tick"

// declError raises a Lua error that Load reports as ErrDeclaration.
func (r *Rule) declError(L *lua.LState, format string, args ...any) {
	r.declFailed = true
	L.RaiseError(format, args...)
}

func (r *Rule) luaRule(L *lua.LState) int {
	if !r.loading {
		L.RaiseError("rule{} may only be called while the file loads")
	}
	if r.declared {
		r.declError(L, "rule{} declared twice")
	}
	t := L.CheckTable(1)
	d := &r.decl
	t.ForEach(func(k, v lua.LValue) {
		key, ok := k.(lua.LString)
		if !ok {
			r.declError(L, "rule{}: unexpected key %s (want %s)", k.String(), ruleFields)
		}
		var err error
		switch key {
		case "name":
			s, ok := v.(lua.LString)
			switch {
			case !ok || s == "":
				err = fmt.Errorf("want a non-empty string")
			case len(s) > MaxRuleName:
				err = fmt.Errorf("%d bytes, longer than %d", len(s), MaxRuleName)
			}
			d.Name = string(s)
		case "topics":
			d.Topics, err = globsArg(v)
		case "pre":
			d.Pre, err = optDurationArg(v)
		case "post":
			d.Post, err = optDurationArg(v)
		case "time":
			s, ok := v.(lua.LString)
			if !ok || (s != TimeProducer && s != TimeCapture && s != TimeEvent) {
				err = fmt.Errorf("want %q, %q or %q", TimeProducer, TimeCapture, TimeEvent)
			}
			d.Time = string(s)
		case "event_time", "event_time_unit":
			s, ok := v.(lua.LString)
			if !ok {
				err = fmt.Errorf("want a string")
			}
			if key == "event_time" {
				d.EventTime = string(s)
			} else {
				d.EventTimeUnit = string(s)
			}
		case "cooldown":
			d.Cooldown, err = durationArg(v)
		case "tick":
			d.Tick, err = durationArg(v)
			if err == nil && d.Tick > 0 && d.Tick < 1e6 {
				err = fmt.Errorf("tick %v is shorter than 1ms", d.Tick)
			}
		case "max_per_minute":
			n, ok := v.(lua.LNumber)
			if !ok || n < 0 || n > 10000 || n != lua.LNumber(int(n)) {
				err = fmt.Errorf("want an integer 0..10000")
			}
			d.MaxPerMinute = int(n)
		default:
			err = fmt.Errorf("unknown field (want %s)", ruleFields)
		}
		if err != nil {
			r.declError(L, "rule{}: %s: %v", string(key), err)
		}
	})
	if d.Name == "" {
		r.declError(L, "rule{}: name is required")
	}
	r.declared = true
	return 0
}

// luaParam is param(name, default): the configured value converted to the
// default's type, or the default.
func (r *Rule) luaParam(L *lua.LState) int {
	if !r.loading {
		L.RaiseError("param() may only be called while the file loads")
	}
	name := L.CheckString(1)
	def := L.Get(2)
	r.paramSet[name] = true
	s, ok := r.opts.Params[name]
	if !ok {
		if def == lua.LNil {
			r.declError(L, "param %q is required", name)
		}
		r.decl.Params[name] = formatParam(def)
		L.Push(def)
		return 1
	}
	switch def.(type) {
	case lua.LNumber:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			r.declError(L, "param %s: %q is not a number", name, s)
		}
		L.Push(lua.LNumber(f))
	case lua.LBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			r.declError(L, "param %s: %q is not a boolean", name, s)
		}
		L.Push(lua.LBool(b))
	default:
		L.Push(lua.LString(s))
	}
	return 1
}

var triggerFields = "reason, pre, post, at, topics, tag, severity"

// luaTrigger is trigger{...}; it returns true when the trigger fired and
// false when the cooldown or rate limit suppressed it.
func (r *Rule) luaTrigger(L *lua.LState) int {
	if r.loading {
		L.RaiseError("trigger{} may not be called while the file loads")
	}
	tr := Trigger{
		Rule: r.decl.Name, Reason: r.decl.Name, Severity: 1, TimeNs: r.now + r.capOff,
		Pre: r.decl.Pre, Post: r.decl.Post, Params: r.trigParams,
	}
	if L.GetTop() >= 1 {
		t := L.CheckTable(1)
		t.ForEach(func(k, v lua.LValue) {
			key, _ := k.(lua.LString)
			var err error
			switch key {
			case "reason", "tag":
				s, ok := v.(lua.LString)
				if !ok {
					err = fmt.Errorf("want a string, got a %s", v.Type())
				}
				if key == "reason" {
					tr.Reason = Bound(string(s), MaxReason)
				} else {
					tr.Tag = Bound(string(s), MaxTag)
				}
			case "pre":
				tr.Pre, err = optDurationArg(v)
			case "post":
				tr.Post, err = optDurationArg(v)
			case "at":
				// "last": the newest message of the selected topics, found
				// by the recorder; a number: a time in the rule's domain
				// (e.g. the last message time a heartbeat rule saw)
				switch x := v.(type) {
				case lua.LString:
					if x != "last" {
						err = fmt.Errorf("want \"last\" or a time in ns, got %q", string(x))
					}
					tr.At = string(x)
				case lua.LNumber:
					if x != x || x <= 0 || x > 1<<62 {
						err = fmt.Errorf("time %v out of range", float64(x))
					}
					tr.TimeNs = int64(x) + r.capOff
				default:
					err = fmt.Errorf("want \"last\" or a time in ns, got a %s", v.Type())
				}
			case "topics":
				tr.Topics, err = globsArg(v)
			case "severity":
				n, ok := v.(lua.LNumber)
				if !ok || n != lua.LNumber(int(n)) || n < 0 || n > 1000 {
					err = fmt.Errorf("want an integer 0..1000")
				}
				tr.Severity = int(n)
			default:
				err = fmt.Errorf("unknown field (want %s)", triggerFields)
			}
			if err != nil {
				L.RaiseError("trigger{}: %s: %v", k.String(), err)
			}
		})
	}
	if !r.admit(r.now) {
		r.st.suppressed.Add(1)
		L.Push(lua.LFalse)
		return 1
	}
	r.st.fired.Add(1)
	if r.opts.OnTrigger != nil {
		r.opts.OnTrigger(tr)
	}
	L.Push(lua.LTrue)
	return 1
}

// luaLog is log(...): the arguments joined by tabs, rate-limited in
// message time.
func (r *Rule) luaLog(L *lua.LState) int {
	if !r.allowLog() {
		r.st.logsDropped.Add(1)
		return 0
	}
	var sb strings.Builder
	for i := 1; i <= L.GetTop(); i++ {
		if i > 1 {
			sb.WriteByte('\t')
		}
		v := L.Get(i)
		s := v.String()
		if sb.Len()+len(s) > 4096 {
			s = s[:max(0, 4096-sb.Len())] + "..."
		}
		sb.WriteString(s)
	}
	r.logger.Info(sb.String(), "rule", r.decl.Name, "time_ns", r.now)
	return 0
}
