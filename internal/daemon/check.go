package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/capture"
	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/engine"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/internal/defaults"
	"github.com/edr-lite/edr-lite/internal/suggest"
	"github.com/edr-lite/edr-lite/scripts"
	"golang.org/x/sys/unix"
)

// Load reads the configuration file at path and checks it exactly as "run"
// does before it builds anything: config.Load, then Check. "edr-lite
// config check" and "edr-lite run" both call it; an error is
// config.Errors with every problem found (the file's own and Check's),
// each with its file and line.
func Load(path string) (*config.File, error) {
	f, ps, err := config.LoadForCheck(path)
	if err != nil {
		return nil, err // unreadable, or a syntax error: nothing more to check
	}
	ps = append(ps, check(f, len(ps) > 0)...)
	if len(ps) > 0 {
		return nil, ps.Sorted().Capped(config.MaxProblems)
	}
	return f, nil
}

// Check builds, without side effects (a probe file or directory made and
// removed again, sockets opened and closed), everything of f that can fail
// when the recorder starts: the recorder's and the dump pipeline's
// configurations, the dump directory and the source directories (existing
// or creatable), every UDP and raw source's options, addresses and
// interfaces (each source's socket is opened and closed again, reading
// nothing: an address not on this host, a group that cannot be joined, a
// raw capture without CAP_NET_RAW), topics two sources would both feed, every rule (built-in
// name, file, params, declaration: loaded and closed again), the control
// socket's directory and HTTP address, and the hook command. It returns
// config.Errors naming every problem with its key and line, or nil. New
// calls it first, so what Check passes New does not reject for the same
// reason (only what cannot be known beforehand remains: a port in use,
// which Warnings names, a full disk).
func Check(f *config.File) error {
	if ps := check(f, false); len(ps) > 0 {
		return ps.Sorted()
	}
	return nil
}

// check is Check; with parseFailed (the file has problems of its own,
// which config.Parse reported) it leaves out the recorder's and the dump
// pipeline's own validation, which would repeat them in other words.
func check(f *config.File, parseFailed bool) config.Errors {
	var ps config.Errors
	add := func(key, format string, args ...any) { ps = append(ps, f.Problem(key, format, args...)) }

	ec, dc, err := RecorderConfig(f)
	var ke *keyedError
	switch {
	case parseFailed:
	case errors.As(err, &ke):
		add(ke.key, "%v", ke.err)
	case err != nil:
		add("recorder", "%v", err)
	default:
		if err := ec.Validate(); err != nil {
			add(engineKey(err), "%s", configReason(err))
		}
		if err := dc.Validate(); err != nil {
			add(dumpKey(err), "%s", configReason(err))
		}
	}
	if f.Recorder.DumpDir != "" {
		if err := creatableDir(f.Recorder.DumpDir); err != nil {
			add("recorder.dump_dir", "%v", err)
		}
	}
	for i, s := range f.Sources.SHM {
		if s.Dir != "" {
			if err := creatableDir(s.Dir); err != nil {
				add(fmt.Sprintf("source.shm[%d].dir", i), "%v", err)
			}
		}
	}
	checkSources(f, add)
	checkCAN(f, add)
	checkRules(f, add)
	if p := f.Control.Socket; p != "" {
		if msg := checkSocket(p); msg != "" {
			add("control.socket", "%s", msg)
		}
	}
	checkHTTP(f, add)
	checkLive(f, add)
	if len(f.Hooks.Exec) > 0 {
		if _, err := exec.LookPath(f.Hooks.Exec[0]); err != nil {
			add("hooks.exec", "%v", err)
		}
	}
	return ps
}

// engineKey maps an engine.ConfigError's field to the configuration key
// (most engine checks are made with better words by config.Parse).
func engineKey(err error) string {
	var ce *engine.ConfigError
	if !errors.As(err, &ce) {
		return "recorder"
	}
	switch f := ce.Field; {
	case f == "CacheSize":
		return "recorder.cache_size"
	case f == "TopicBytes":
		return "recorder.topic_bytes"
	case f == "MaxPacket":
		return "recorder.max_packet"
	case f == "Guard":
		return "recorder.guard"
	case f == "Pre/Post":
		return "recorder.pre"
	case f == "MaxTopics":
		return "recorder.max_topics"
	case strings.HasPrefix(f, "Include"):
		return "recorder.include"
	case strings.HasPrefix(f, "Exclude"):
		return "recorder.exclude"
	case strings.HasPrefix(f, "Topics["):
		i, _, _ := strings.Cut(strings.TrimPrefix(f, "Topics["), "]")
		return "topic[" + i + "]"
	}
	return "recorder"
}

// configReason is the reason of an engine or dump ConfigError (its Go
// field name is the key's business), else the error's text.
func configReason(err error) string {
	var ee *engine.ConfigError
	var de *dump.ConfigError
	switch {
	case errors.As(err, &ee):
		return ee.Reason
	case errors.As(err, &de):
		return de.Reason
	}
	return err.Error()
}

// dumpKey maps a dump.ConfigError's field to the configuration key.
func dumpKey(err error) string {
	var ce *dump.ConfigError
	if !errors.As(err, &ce) {
		return "recorder"
	}
	if k, ok := map[string]string{"Dir": "recorder.dump_dir", "MaxFiles": "rotation.max_files", "FileMode": "recorder.dump_mode",
		"Group": "recorder.dump_group", "MaxTotalBytes": "rotation.max_total_bytes", "MinFreeDisk": "rotation.min_free_disk",
		"Compression": "recorder.compression", "Policy": "recorder.coalesce", "FrameSize": "recorder.frame_target_size",
		"MaxPerMinute": "recorder.max_dumps_per_minute", "MaxManualPerMinute": "recorder.max_manual_dumps_per_minute",
		"StopTimeout": "recorder.stop_deadline", "ReorderWindow": "recorder.reorder_window"}[ce.Field]; ok {
		return k
	}
	return "recorder"
}

// maxSocketPath is the longest path a Unix socket can be bound to
// (sun_path holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// checkSocket says why the control socket cannot be created at p ("" when
// it can): a path too long, a directory that does not exist or is not
// writable, a file there that is not a socket (one another recorder
// listens on is Warnings').
func checkSocket(p string) string {
	dir := filepath.Dir(p)
	if len(p) > maxSocketPath {
		return fmt.Sprintf("%s: %d bytes, longer than a Unix socket path may be (%d)", p, len(p), maxSocketPath)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Sprintf("%s: its directory %s does not exist", p, dir)
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Sprintf("%s: its directory %s is not writable: %v", p, dir, err)
	}
	if st, err := os.Lstat(p); err == nil && st.Mode()&os.ModeSocket == 0 {
		return fmt.Sprintf("%s exists and is not a socket (run replaces a stale socket, nothing else)", p)
	}
	return ""
}

// creatableDir reports whether dir is a directory run can write in, or
// can be created: it or its nearest existing ancestor is a directory where
// a file (a directory) can be made. That is proven as run proves it, by
// making one and removing it again (a mode bit or root's access(2) says
// nothing about /proc or a read-only mount).
func creatableDir(dir string) error {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s: %s is not a directory", dir, d)
			}
			if err := unix.Access(d, unix.W_OK); err != nil {
				return fmt.Errorf("%s: %s is not writable: %v", dir, d, err)
			}
			var probe string
			if d == filepath.Clean(dir) {
				f, err := os.CreateTemp(d, ".edr-lite-check-*")
				if err != nil {
					return fmt.Errorf("%s: cannot write in it: %v", dir, unwrapPath(err))
				}
				f.Close()
				probe = f.Name()
			} else if probe, err = os.MkdirTemp(d, ".edr-lite-check-*"); err != nil {
				return fmt.Errorf("%s: cannot be created in %s: %v", dir, d, unwrapPath(err))
			}
			os.Remove(probe)
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %v", dir, err)
		}
		if filepath.Dir(d) == d {
			return fmt.Errorf("%s: no existing parent directory", dir)
		}
	}
}

// unwrapPath is the cause of a *fs.PathError (whose path is a probe's
// temporary name, not the user's).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// hostPort parses "host:port" with a numeric port.
func hostPort(a string) (port int, err error) {
	_, p, err := net.SplitHostPort(a)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("port %q: want 0..65535", p)
	}
	return n, nil
}

// checkSources checks every network source as NewUDP and NewRaw would,
// and that no two of them would feed one topic.
func checkSources(f *config.File, add func(key, format string, args ...any)) {
	type fixed struct{ key, name string }
	var names []fixed
	for i, s := range f.Sources.UDP {
		key := fmt.Sprintf("source.udp[%d]", i)
		if s.Listen == "" {
			continue // config.Parse said so
		}
		port, err := hostPort(s.Listen)
		if err != nil {
			add(key+".listen", "%q: %v", s.Listen, err)
			continue
		}
		addr := s.Listen
		if s.Group != "" {
			g, err := netip.ParseAddr(s.Group)
			if err != nil || !g.IsMulticast() {
				add(key+".group", "%q is not a multicast group address", s.Group)
				continue
			}
			addr = net.JoinHostPort(s.Group, strconv.Itoa(port))
		}
		if s.Interface != "" {
			if _, err := net.InterfaceByName(s.Interface); err != nil {
				add(key+".interface", "%q: %v", s.Interface, err)
			}
		}
		o := capture.UDPOptions{Addr: addr, Interface: s.Interface, Topic: s.Topic, Type: s.Type, MaxPacket: int(s.MaxPacket), GRO: s.GRO}
		if err := o.Validate(); err != nil {
			add(key, "%v", err)
			continue
		}
		// what binding would meet; a port in use now is Warnings' (it
		// may be this recorder's own, running)
		if err := capture.ProbeUDP(o); err != nil && !errors.Is(err, unix.EADDRINUSE) {
			k := key + ".listen"
			if strings.Contains(err.Error(), "capture: join") {
				k = key + ".group"
			}
			add(k, "%s: %v (run would fail)", addr, err)
		}
		tmpl := s.Topic
		if tmpl == "" {
			tmpl = defaults.UDPTopic
		}
		// a listener's {dport} is its own port: with only that, it names
		// one topic, which no other listener may name too
		if t, err := capture.ParseTemplate(strings.ReplaceAll(tmpl, "{dport}", strconv.Itoa(port))); err == nil && t.Fixed() {
			n := t.String()
			if s.Channel != "" {
				n += "#" + s.Channel
			}
			names = append(names, fixed{key, n})
		} else if err != nil {
			add(key+".topic", "%v", err)
		}
	}
	for i, s := range f.Sources.Raw {
		key := fmt.Sprintf("source.raw[%d]", i)
		if s.Interface != "" {
			if _, err := net.InterfaceByName(s.Interface); err != nil {
				add(key+".interface", "%q: %v", s.Interface, err)
			}
		}
		if s.Topic != "" {
			if t, err := capture.ParseTemplate(s.Topic); err != nil {
				add(key+".topic", "%v", err)
			} else if t.Fixed() {
				n := t.String()
				if s.Channel != "" {
					n += "#" + s.Channel
				}
				names = append(names, fixed{key, n})
			}
		}
		filter, err := rawFilter(s.Filter)
		if err != nil {
			add(key+".filter", "%v", err)
		} else if filter != nil && !capture.KernelFilterBuilt {
			add(key+".filter", "%s", capture.NotBuiltFilter)
		} else if s.Interface != "" {
			if _, err := net.InterfaceByName(s.Interface); err == nil {
				if err := capture.ProbeRaw(capture.RawOptions{Interface: s.Interface, Filter: filter}); err != nil {
					add(key, "%v%s (run would fail)", err, rawPrivilegeHint(err))
				}
			}
		}
	}
	seen := map[string]string{}
	for _, n := range names {
		if o, ok := seen[n.name]; ok {
			add(n.key+".channel", "topic %q is also fed by %s: give one of the two a channel", n.name, o)
			continue
		}
		seen[n.name] = n.key
	}
}

// rawPrivilegeHint explains a raw capture's probe refused for want of a
// capability; "" for other errors.
func rawPrivilegeHint(err error) string {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return ": a raw capture needs CAP_NET_RAW (and CAP_BPF for the filter), which this process lacks; check as the user the recorder runs as"
	}
	return ""
}

// checkRules loads every rule as New does (built-in name or file, params,
// time, declaration) and closes it again; names must be unique.
func checkRules(f *config.File, add func(key, format string, args ...any)) {
	names := map[string]int{}
	for i, rc := range f.Rules {
		key := fmt.Sprintf("rule[%d]", i)
		if (rc.File == "") == (rc.Name == "") || (rc.Time != "" && rc.Time != scripts.TimeProducer && rc.Time != scripts.TimeCapture && rc.Time != scripts.TimeEvent) {
			continue // config.Parse said so
		}
		if pn, ok := rc.Params["name"]; ok && rc.InstanceName != "" && pn != rc.InstanceName {
			add(key+".name", "%q and params.name %q: give the rule's name once", rc.InstanceName, pn)
			continue
		}
		r, err := loadRule(rc, scripts.Options{})
		if err != nil {
			var up *scripts.UnknownParamsError
			switch {
			case errors.As(err, &up):
				for _, n := range up.Names {
					hint := suggest.DidYouMean(n, up.Declared)
					if hint == "" {
						hint = " (the rule declares: " + strings.Join(up.Declared, ", ") + ")"
					}
					add(key+".params."+n, "unknown param%s", hint)
				}
			case rc.Name != "" && errors.Is(err, scripts.ErrNoRule):
				hint := suggest.DidYouMean(rc.Name, scripts.ShippedNames())
				if hint == "" {
					hint = " (shipped: " + strings.Join(scripts.ShippedNames(), ", ") + "; \"edr-lite rules list\" describes them)"
				}
				add(key+".builtin", "no shipped rule %q%s", rc.Name, hint)
			case paramKey(err) != "":
				add(key+".params."+paramKey(err), "%v", err)
			case rc.Name != "":
				add(key+".builtin", "%v", err)
			default:
				add(key+".file", "%v", err)
			}
			continue
		}
		name := r.Name()
		r.Close()
		if j, ok := names[name]; ok {
			how := "name = \"" + name + "_2\" in this [[rule]]"
			if rc.Name != "" {
				how += " (or params.name)"
			}
			add(key+".name", "a second rule named %q (rule[%d] is the first): give this one a name of its own, e.g. %s", name, j, how)
			continue
		}
		names[name] = i
	}
}

// reParam finds the param a rule refused ("param decel: \"fast\" is not a
// number", "param \"topic\" is required").
var reParam = regexp.MustCompile(`param "?([A-Za-z0-9_]+)"?[: ]`)

// paramKey is the param a rule's load error is about, "" when none.
func paramKey(err error) string {
	if m := reParam.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}

// RuleWindow is the window a rule's dumps use and where it comes from.
type RuleWindow struct {
	Rule string
	// Pre and Post are the windows; PreFrom and PostFrom say whose they
	// are: "rule" (rule{} or its params) or "recorder" ([recorder] pre
	// and post; a [[topic]] override still applies to its topics).
	Pre, Post         time.Duration
	PreFrom, PostFrom string
}

// windowOf resolves a rule declaration's window against the recorder's.
func windowOf(f *config.File, d scripts.Decl) RuleWindow {
	w := RuleWindow{Rule: d.Name, Pre: f.Recorder.Pre.D(), Post: f.Recorder.Post.D(), PreFrom: "recorder", PostFrom: "recorder"}
	if d.Pre != nil {
		w.Pre, w.PreFrom = *d.Pre, "rule"
	}
	if d.Post != nil {
		w.Post, w.PostFrom = *d.Post, "rule"
	}
	return w
}

// RuleWindows loads every rule of f (already checked) to report the
// window its dumps will use.
func RuleWindows(f *config.File) ([]RuleWindow, error) {
	var out []RuleWindow
	for i, rc := range f.Rules {
		r, err := loadRule(rc, scripts.Options{})
		if err != nil {
			return nil, fmt.Errorf("rule[%d]: %w", i, err)
		}
		out = append(out, windowOf(f, r.Decl()))
		r.Close()
	}
	return out, nil
}
