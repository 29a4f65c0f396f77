package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/edr-lite/edr-lite/can"
	"github.com/edr-lite/edr-lite/capture"
	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/internal/config"
	"github.com/edr-lite/edr-lite/pack"
)

// CAN buses ([[source.can]], docs/can.md): a SocketCAN source, or a raw
// capture whose frames a can.EthDecoder turns into buses. Everything of
// it is here; New, Start, closeSources, Check and Status call in.

// canSource is one [[source.can]] table, opened.
type canSource struct {
	key  string
	log  *can.LogSource
	sock *can.SocketCAN
	raw  *capture.RawSource
	dec  *can.EthDecoder
}

// ethFrames hands a raw source's frames to an EthDecoder.
type ethFrames struct{ d *can.EthDecoder }

func (e ethFrames) HandleFrame(ns int64, p *capture.Packet) {
	e.d.Handle(ns, p.EtherType, p.EtherPayload)
}
func (e ethFrames) Close() { e.d.Close() }

// canPlan is what a [[source.can]] table means once checked.
type canPlan struct {
	dbc     *can.DBC
	filters []can.IDFilter
	names   map[uint64]string
}

// planCAN checks one table as opening it would, without side effects.
func planCAN(f *config.File, i int, s config.CANSource, add func(key, format string, args ...any)) (canPlan, bool) {
	key := fmt.Sprintf("source.can[%d]", i)
	var p canPlan
	ok := true
	bad := func(k, format string, args ...any) {
		add(key+k, format, args...)
		ok = false
	}
	kinds := 0
	for _, k := range []string{s.Interface, s.Ethernet, s.Candump} {
		if k != "" {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		bad("", "give interface (SocketCAN), ethernet (CAN over Ethernet: ASAM CMP, TECMP) or candump (a log as it is written)")
	case kinds > 1:
		bad("", "interface (SocketCAN), ethernet (CAN over Ethernet) and candump (a log) are different sources: one per table")
	}
	if s.Candump != "" {
		if st, err := os.Stat(s.Candump); err != nil {
			bad(".candump", "%v", err)
		} else if st.IsDir() {
			bad(".candump", "%s is a directory", s.Candump)
		}
		if s.Name != "" || len(s.Filters) > 0 || s.Protocol != "" || len(s.Buses) > 0 {
			bad(".candump", "a log names its buses: name, filters, protocol and buses are for the other kinds")
		}
	}
	switch {
	case s.Candump != "": // checked above
	case s.Ethernet != "":
		if s.Protocol != "" && s.Protocol != "cmp" && s.Protocol != "tecmp" {
			bad(".protocol", "%q: want cmp or tecmp", s.Protocol)
		}
		if len(s.Filters) > 0 {
			bad(".filters", "ID filters are SocketCAN's (the kernel filters a capture by its EtherType)")
		}
		if s.Name != "" || s.Topic != "" {
			bad(".name", "a capture module's buses are named with buses = { \"DEVICE-INTERFACE\" = NAME }")
		}
		p.names = map[uint64]string{}
		for k, name := range s.Buses {
			dev, ifc, found := strings.Cut(k, "-")
			dv, err1 := strconv.ParseUint(dev, 10, 16)
			iv, err2 := strconv.ParseUint(ifc, 10, 32)
			if !found || err1 != nil || err2 != nil || name == "" || strings.ContainsAny(name, " \t#") {
				bad(".buses", "%q = %q: want \"DEVICE-INTERFACE\" (decimal) = a name without spaces", k, name)
				continue
			}
			p.names[dv<<32|iv] = name
		}
	default:
		if s.Protocol != "" || len(s.Buses) > 0 || s.Promiscuous {
			bad(".protocol", "protocol, buses and promiscuous are for ethernet (CAN over Ethernet)")
		}
		for _, fs := range s.Filters {
			fl, err := can.ParseIDFilter(fs)
			if err != nil {
				bad(".filters", "%v", err)
				continue
			}
			p.filters = append(p.filters, fl)
		}
	}
	if s.DBC != "" {
		path := s.DBC
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(f.Name()), path)
		}
		d, err := can.LoadDBC(path)
		if err != nil {
			bad(".dbc", "%v", err)
		}
		p.dbc = d
	}
	return p, ok
}

// checkCAN checks every [[source.can]] table (daemon.Check).
// A table that plans well is then opened as run opens it, and closed
// again: a SocketCAN socket bound to its interface, or the raw capture of
// a CAN-over-Ethernet interface (what run refuses to start without).
func checkCAN(f *config.File, add func(key, format string, args ...any)) {
	for i, s := range f.Sources.CAN {
		p, ok := planCAN(f, i, s, add)
		if !ok {
			continue
		}
		key := fmt.Sprintf("source.can[%d]", i)
		switch {
		case s.Interface != "":
			if err := can.ProbeSocketCAN(can.SocketCANOptions{Interface: s.Interface, Filters: p.filters}); err != nil {
				hint := ""
				if errors.Is(err, unix.EAFNOSUPPORT) {
					hint = ": this kernel has no SocketCAN (load it: modprobe can_raw)"
				}
				add(key+".interface", "%v%s (run would fail)", err, hint)
			}
		case s.Ethernet != "":
			if _, err := net.InterfaceByName(s.Ethernet); err != nil {
				add(key+".ethernet", "%q: %v", s.Ethernet, err)
			} else if err := capture.ProbeRaw(capture.RawOptions{Interface: s.Ethernet, Filter: &capture.Filter{EtherType: can.EtherTypeCMP}}); err != nil {
				add(key, "%v%s (run would fail)", err, rawPrivilegeHint(err))
			}
		}
	}
}

// openCAN opens every [[source.can]] table (New).
func (d *Daemon) openCAN() error {
	for i, s := range d.cfg.Sources.CAN {
		var first error
		p, ok := planCAN(d.cfg, i, s, func(key, format string, args ...any) {
			if first == nil {
				first = fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...))
			}
		})
		if !ok {
			return first
		}
		key := fmt.Sprintf("source.can[%d]", i)
		c := &canSource{key: key}
		if s.Candump != "" {
			fh, err := openCandump(s.Candump)
			if err != nil {
				return fmt.Errorf("%s.candump: %w", key, err)
			}
			c.log = can.NewLogSource(fh, d.sourceSink(key), can.BusOptions{Topic: s.Topic, Channel: s.Channel, FD: s.FD, DBC: p.dbc,
				PerID: s.PerID, Source: "candump:" + s.Candump})
		} else if s.Interface != "" {
			sock, err := can.NewSocketCAN(d.sourceSink(key), can.SocketCANOptions{Interface: s.Interface, Filters: p.filters,
				Bus: can.BusOptions{Name: s.Name, Topic: s.Topic, Channel: s.Channel, FD: s.FD, DBC: p.dbc, PerID: s.PerID}})
			if err != nil {
				return fmt.Errorf("%s (%s): %w", key, s.Interface, err)
			}
			c.sock = sock
		} else {
			dec, err := can.NewEthDecoder(d.sourceSink(key), can.EthOptions{Protocol: s.Protocol, Source: "cmp:" + s.Ethernet,
				Names: p.names, FD: s.FD, DBC: p.dbc, PerID: s.PerID})
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			r, err := capture.NewRaw(capture.RawOptions{Interface: s.Ethernet, Promiscuous: s.Promiscuous,
				Filter: &capture.Filter{EtherType: can.EtherTypeCMP}, Frames: ethFrames{dec}}, d.sourceSink(key))
			if err != nil {
				return fmt.Errorf("%s (%s): %w", key, s.Ethernet, err)
			}
			c.raw, c.dec = r, dec
		}
		d.cans = append(d.cans, c)
	}
	return nil
}

// openCandump opens a candump log: a FIFO read and write, so that opening
// does not wait for a writer and the writer's restarts are no end.
func openCandump(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode()&os.ModeNamedPipe != 0 {
		return os.OpenFile(path, os.O_RDWR, 0)
	}
	return os.Open(path)
}

func (c *canSource) run(ctx context.Context) error {
	if c.log != nil {
		return c.log.Run(ctx)
	}
	if c.sock != nil {
		return c.sock.Run(ctx)
	}
	return c.raw.Run(ctx)
}

func (c *canSource) close() {
	if c.log != nil {
		c.log.Close()
		return
	}
	if c.sock != nil {
		c.sock.Close()
	} else {
		c.raw.Close()
	}
}

// buses returns the source's buses, by name.
func (c *canSource) buses() []*can.Bus {
	if c.log != nil {
		b := c.log.Buses()
		sort.Slice(b, func(i, j int) bool { return b[i].Name() < b[j].Name() })
		return b
	}
	if c.sock != nil {
		return []*can.Bus{c.sock.Bus()}
	}
	b := c.dec.Buses()
	sort.Slice(b, func(i, j int) bool { return b[i].Name() < b[j].Name() })
	return b
}

// CANBusStatus is one bus's accounting in the status (docs/can.md,
// "Accounting").
type CANBusStatus struct {
	Source      string `json:"source"`
	Bus         string `json:"bus"`
	Topic       string `json:"topic"`
	Frames      uint64 `json:"frames"`
	ErrorFrames uint64 `json:"error_frames"`
	BusOff      uint64 `json:"bus_off"`
	Restarts    uint64 `json:"restarts"`
	Lost        uint64 `json:"lost"`
	Rejected    uint64 `json:"rejected"`
	// With a DBC: messages decoded (per message too), frames of IDs the
	// DBC lacks and frames shorter than their message, with their IDs.
	Decoded    uint64            `json:"decoded,omitempty"`
	Unknown    uint64            `json:"unknown,omitempty"`
	Short      uint64            `json:"short,omitempty"`
	UnknownIDs []string          `json:"unknown_ids,omitempty"`
	ShortIDs   []string          `json:"short_ids,omitempty"`
	Messages   map[string]uint64 `json:"messages,omitempty"`
}

// CANCaptureStatus is a CAN-over-Ethernet source's own counters.
type CANCaptureStatus struct {
	Source     string `json:"source"`
	Frames     uint64 `json:"frames"`
	Messages   uint64 `json:"messages"`
	Skipped    uint64 `json:"skipped"`
	Malformed  uint64 `json:"malformed"`
	Overflows  uint64 `json:"overflows"`
	Refused    uint64 `json:"refused"`
	FirstError string `json:"first_error,omitempty"`
	KernelLost uint64 `json:"kernel_lost"`
}

// canStatus is the CAN part of the status.
func (d *Daemon) canStatus() ([]CANBusStatus, []CANCaptureStatus) {
	var buses []CANBusStatus
	var caps []CANCaptureStatus
	for _, c := range d.cans {
		for _, b := range c.buses() {
			s := b.Stats()
			buses = append(buses, CANBusStatus{Source: c.key, Bus: b.Name(), Topic: b.Topic(), Frames: s.Frames,
				ErrorFrames: s.ErrorFrames, BusOff: s.BusOff, Restarts: s.Restarts, Lost: s.Lost, Rejected: s.Rejected,
				Decoded: s.Decoded, Unknown: s.Unknown, Short: s.Short, UnknownIDs: can.IDNames(s.UnknownIDs),
				ShortIDs: can.IDNames(s.ShortIDs), Messages: s.Messages})
		}
		if c.dec != nil {
			s, rs := c.dec.Stats(), c.raw.Stats()
			caps = append(caps, CANCaptureStatus{Source: c.key, Frames: s.Frames, Messages: s.Messages, Skipped: s.Skipped,
				Malformed: s.Malformed, Overflows: s.Overflows, Refused: s.Refused, FirstError: s.FirstError, KernelLost: rs.Lost})
		}
	}
	return buses, caps
}

// canSourceStats is every [[source.can]] table's figures and whether it
// receives, for sourceStats: a bus that records nothing (a FIFO nobody
// writes, a quiet interface, a stopped socket) is as visible as a silent
// UDP listener. Messages counts the frames (error frames too), Rejected
// the frames the recorder refused, Errors a log's lines that are no
// candump frame and a capture's malformed Ethernet frames.
func (d *Daemon) canSourceStats() []SourceStat {
	var out []SourceStat
	for i, c := range d.cans {
		s := d.cfg.Sources.CAN[i]
		st := SourceStat{Kind: "can", Key: c.key}
		var what, firstBad string
		switch {
		case c.log != nil:
			st.Name, what = s.Candump, "from "+s.Candump
			ls := c.log.Stats()
			st.Errors, firstBad = ls.BadLines, ls.FirstBad
		case c.sock != nil:
			st.Name, what = s.Interface, "on "+s.Interface
		default:
			st.Name, what = s.Ethernet, "on "+s.Ethernet+" (CAN over Ethernet, EtherType 0x99FE)"
			es, rs := c.dec.Stats(), c.raw.Stats()
			st.Errors, firstBad, st.Lost = es.Malformed, es.FirstError, rs.Lost
		}
		for _, b := range c.buses() {
			bs := b.Stats()
			st.Messages += bs.Frames + bs.ErrorFrames
			st.Rejected += bs.Rejected
			st.Lost += bs.Lost
		}
		switch stopped := d.stoppedErr(c.key); {
		case stopped != nil:
			st.Cause, st.Why = CauseStopped, "stopped: "+stopped.Error()
		case st.Messages > st.Rejected:
			st.Receiving = true
		case st.Messages > 0:
			st.Cause, st.Why = CauseRefused, fmt.Sprintf("%d frames arrived %s, the recorder refused every one", st.Messages, what)
		case st.Errors > 0:
			st.Cause, st.Why = CauseRefused, fmt.Sprintf("%d records arrived %s, none a CAN frame (the first: %s)", st.Errors, what, firstBad)
		default:
			st.Cause, st.Why = CauseNoData, "no CAN frame received "+what+" since the recorder started"
		}
		out = append(out, st)
	}
	return out
}

// canAccounting is the dump transform that writes into a dump, per CAN
// frame topic of a bus with a DBC, what the DBC made of the frames the
// dump holds (dumpinfo.CANAccount; docs/can.md, "Accounting"): counted
// over the dump's own frames, so over its window exactly. It is in the
// chain only when a [[source.can]] table has a DBC (a chain writes each
// message through a copy, not from the ring).
type canAccounting struct{ d *Daemon }

// canTransform returns the CAN accounting transform, nil when no bus
// decodes by a DBC.
func (d *Daemon) canTransform() dump.Transform {
	for _, s := range d.cfg.Sources.CAN {
		if s.DBC != "" {
			return canAccounting{d}
		}
	}
	return nil
}

func (a canAccounting) NewStage(next dump.MessageWriter) dump.Stage {
	return &canStage{d: a.d, next: next, topics: map[canTopicKey]*canTally{}}
}

type canTopicKey struct{ name, channel string }

// canTally is one frame topic's count in a dump.
type canTally struct {
	topic string // pack.Topic(name, channel), as the accounting spells it
	dbc   *can.DBC
	t     can.Tally
}

// canStage counts one dump's frames; it passes every message on as it is.
type canStage struct {
	d      *Daemon
	next   dump.MessageWriter
	topics map[canTopicKey]*canTally // nil: not a frame topic of a bus with a DBC
	order  []*canTally
	f      can.Frame
}

func (s *canStage) WriteMessage(t *ingest.TopicInfo, genNs, captureNs int64, data []byte) error {
	k := canTopicKey{t.Name, t.Channel}
	ct, seen := s.topics[k]
	if !seen {
		if dbc := s.d.frameDBC(t); dbc != nil {
			ct = &canTally{topic: pack.Topic(t.Name, t.Channel), dbc: dbc}
			s.order = append(s.order, ct)
		}
		s.topics[k] = ct
	}
	if ct != nil && s.f.Decode(data) == nil {
		ct.t.Add(ct.dbc, &s.f)
	}
	return s.next.WriteMessage(t, genNs, captureNs, data)
}

func (s *canStage) Flush() error { return nil }

func (s *canStage) Account(info *dumpinfo.Info) {
	for _, ct := range s.order {
		for i := range info.Topics {
			if info.Topics[i].Topic == ct.topic {
				info.Topics[i].CAN = ct.t.Account(ct.dbc)
			}
		}
	}
}

// frameDBC returns the DBC of the bus whose frames topic t holds (its
// frame topic, or one of its per-ID topics), nil when t holds no frames
// of a bus with a DBC.
func (d *Daemon) frameDBC(t *ingest.TopicInfo) *can.DBC {
	if ok, _ := can.IsFrameType(t.Type); !ok {
		return nil
	}
	for _, c := range d.cans {
		for _, b := range c.buses() {
			if b.DBC() == nil || b.Channel() != t.Channel {
				continue
			}
			if t.Name == b.Topic() || b.PerID() && strings.HasPrefix(t.Name, b.Topic()+"/0x") {
				return b.DBC()
			}
		}
	}
	return nil
}
