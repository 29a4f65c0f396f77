package scripts

import (
	"errors"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/edr-lite/edr-lite/ingest"
)

// TestHostileMetatableOnGlobals: a metatable on _G whose __index never
// returns must not take the host down. The host looks up the handlers
// raw (a strict-mode _G that errors on unknown names loads fine); a rule
// whose own code hits the __index fails with its file and line, at load
// (a reload then keeps the old version) and at run time.
func TestHostileMetatableOnGlobals(t *testing.T) {
	const loop = "setmetatable(_G, {__index = function() while true do end end})\n"
	// the reload: loads, since nothing reads an unknown global
	if _, err := LoadSource("t.lua", "rule{name='r', topics='a'}\nfunction on_message(m) end\n"+loop, Options{Logger: quiet}); err != nil {
		t.Errorf("load with a looping _G.__index: %v", err)
	}
	strict := "setmetatable(_G, {__index = function(_, k) error('undefined global ' .. k, 2) end})\n"
	if _, err := LoadSource("t.lua", strict+"rule{name='r', topics='a'}\nfunction on_message(m) end\n", Options{Logger: quiet}); err != nil {
		t.Errorf("load with a strict _G: %v", err)
	}
	hostile := "rule{name='r', topics='a'}\nfunction on_message(m) end\n" + loop + "local x = not_defined\n"
	_, err := LoadSource("t.lua", hostile, Options{Logger: quiet})
	if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "t.lua:3") {
		t.Errorf("load: %v", err)
	}

	f := &fired{}
	r, err := LoadSource("t.lua", "rule{name='r', topics='a'}\nfunction on_message(m) trigger{reason='v1'} end", Options{OnTrigger: f.on, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := NewHost(r)
	defer h.Close()
	if err := h.ReloadSource("r", hostile); !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "t.lua:3") {
		t.Errorf("reload: %v", err)
	}
	h.Feed(&Message{Topic: "a", TS: at(time.Second)})
	if len(f.list) != 1 || f.list[0].Reason != "v1" {
		t.Errorf("old version fired %v", f.list)
	}
	// at run time: the rule is disabled naming the line, the host goes on
	if err := h.ReloadSource("r", "rule{name='r', topics='a'}\n"+loop+"function on_message(m) local y = missing end\n"); err != nil {
		t.Fatal(err)
	}
	h.Feed(&Message{Topic: "a", TS: at(2 * time.Second)})
	if st := h.Status()[0]; !st.Disabled || !strings.Contains(st.Why, "t.lua:2") {
		t.Errorf("run: %+v", st)
	}
}

// TestErrorWithoutMessage: error({}) and error(nil) name file and line.
func TestErrorWithoutMessage(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"error({})", "t.lua:3: error raised with a table value"},
		{"error(nil)", "t.lua:3: error raised with a nil value"},
		{"local function f() error({code = 1}, 2) end\nf()", "t.lua:4: error raised with a table value"},
		{"local ok, e = pcall(error, {}) assert(type(e) == 'table') error(e)", "t.lua:3: error raised with a table value"},
	} {
		r, _ := load(t, "rule{name='e', topics='a'}\n\nfunction on_message(m) "+c.body+" end", nil)
		r.Feed(&Message{Topic: "a", TS: 1})
		if st := r.Status(); !st.Disabled || !strings.Contains(st.Why, c.want) {
			t.Errorf("%s: why = %q, want %q", c.body, st.Why, c.want)
		}
	}
}

// TestLiveStuckRule: a rule inside a long callback shows CallNs and Stuck
// in Status; Reload and DumpFinished give up on it after ControlWait
// instead of hanging their caller; CloseWithin stops a rule looping in Lua
// at once, and abandons (reports false) one stuck in a Go function.
func TestLiveStuckRule(t *testing.T) {
	rec, _ := newLiveRecorder(t, 64<<10)
	id, _ := rec.Discover(ingest.TopicInfo{Name: "x"})
	loop, err := LoadSource("loop.lua", "rule{name='loop', topics='x'}\nfunction on_message(m) while true do end end",
		Options{Logger: quiet, Budget: Budget{Instructions: 1 << 60}})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	gostuck, err := LoadSource("go.lua", "rule{name='go', topics='x'}\nfunction on_message(m) block() end", Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// a Go function that does not return: what a library function with a
	// cost bug would do
	gostuck.L.SetGlobal("block", gostuck.L.NewFunction(func(*lua.LState) int { <-release; return 0 }))
	l, _ := StartLive(rec, []*Rule{loop, gostuck}, LiveOptions{Poll: time.Millisecond, TopicPoll: time.Millisecond, ControlWait: 100 * time.Millisecond})
	defer func() { close(release); l.wg.Wait() }()
	settle(l)
	rec.IngestAt(id, at(0), 0, nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := l.Status()
		if st[0].Stuck && st[1].Stuck {
			if st[0].CallNs < int64(StuckAfter) {
				t.Errorf("stuck with CallNs %v", time.Duration(st[0].CallNs))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rules not reported stuck: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := l.ReloadSource("loop", "rule{name='loop', topics='x'}\nfunction on_message(m) end"); !errors.Is(err, ErrBusy) {
		t.Errorf("reload of a stuck rule: %v", err)
	}
	l.DumpFinished(DumpResult{Path: "/d/x.pack"}) // returns
	if l.CloseWithin(200 * time.Millisecond) {
		t.Error("CloseWithin reported every rule stopped while one is stuck in Go")
	}
	if !l.runners[0].exited.Load() {
		t.Error("the rule looping in Lua was not stopped by CloseWithin")
	}
}
