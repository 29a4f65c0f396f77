package replay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/edr-lite/edr-lite/dump"
	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/pack"
)

// Labels of a dump written by a closed-loop replay (LoopOptions.Record).
const (
	// RecordModeLabel is the mode that wrote it ("input-only", "full").
	RecordModeLabel = "edr.replay.mode"
	// RecordOfLabel lists the dumps it replayed, comma-separated.
	RecordOfLabel = "edr.replay.of"
)

// writeRecord writes LoopOptions.Record: the inputs released by every
// player (as the system under test saw them: remapped names, recorded
// producer and capture times, payloads as recorded; a live input at its
// time on the timeline) and the outputs collected after
// the first input (their producer time as published, their capture time
// their replay time, Loop.attribute), merged in time order (an output
// before an input of the same time; each topic in its order of arrival). The file is
// written as NAME.tmp, made durable and renamed, like a recorder's dump.
func (l *Loop) writeRecord(got map[int]*collected, dyn []*collected) (err error) {
	path := l.opts.Record
	tmp := path + ".tmp"
	mk := dump.NewPackWriteWriter
	if strings.HasSuffix(strings.ToLower(path), ".mcap") {
		mk = dump.NewMCAPWriter
	}
	name := l.opts.Writer
	if name == "" {
		name = "edr-lite replay"
	}
	w, err := mk(tmp, dump.WriterOptions{Compression: "none", FrameSize: 1 << 20, WriterName: name, CreatedNs: time.Now().UnixNano()})
	if err != nil {
		return fmt.Errorf("replay: record: %w", err)
	}
	defer func() {
		if err != nil {
			w.Abort()
			os.Remove(tmp)
		}
	}()
	accounts := map[*ingest.TopicInfo]*dumpinfo.TopicAccount{}
	var order []*ingest.TopicInfo
	account := func(ti *ingest.TopicInfo, ts int64, n int) {
		a := accounts[ti]
		if a == nil {
			a = &dumpinfo.TopicAccount{Topic: pack.Topic(ti.Name, ti.Channel), Type: ti.Type.Schema.Name, FirstNs: ts}
			accounts[ti] = a
			order = append(order, ti)
		}
		a.Messages++
		a.Bytes += uint64(n)
		a.LastNs = ts
	}
	var startNs, endNs int64
	write := func(ti *ingest.TopicInfo, gen, capture int64, data []byte) error {
		if startNs == 0 || capture < startNs {
			startNs = capture
		}
		endNs = max(endNs, capture)
		account(ti, capture, len(data))
		return w.WriteMessage(ti, gen, capture, data)
	}

	// the outputs, by replay time
	type outMsg struct {
		ti     *ingest.TopicInfo
		t, gen int64
		data   []byte
	}
	var outs []outMsg
	cs := dyn
	for i := range l.exp {
		if c := got[i]; c != nil {
			cs = append(cs, c)
		}
	}
	for _, c := range cs {
		ti := &ingest.TopicInfo{Name: c.info.Name, Channel: c.info.Channel, Type: c.info.Type}
		if c.expected >= 0 && !typed(ti.Type) {
			// the node declared no encoding (a UDP datagram, a name alone):
			// the output keeps the type the recording gives it
			ti.Type = l.exp[c.expected].topic.Type
		}
		pub, _ := l.attribute(c)
		for _, p := range pub {
			outs = append(outs, outMsg{ti, p.timeNs, p.genNs, p.data})
		}
	}
	sort.SliceStable(outs, func(i, j int) bool { return outs[i].t < outs[j].t })

	// the inputs as released (in turn order, every player), merged with
	// the outputs
	oi := 0
	for _, in := range l.recIn {
		for oi < len(outs) && outs[oi].t <= in.at {
			if err := write(outs[oi].ti, outs[oi].gen, outs[oi].t, outs[oi].data); err != nil {
				return err
			}
			oi++
		}
		if err := write(in.info, in.gen, max(in.done, in.at), in.data); err != nil {
			return err
		}
	}
	for ; oi < len(outs); oi++ {
		if err := write(outs[oi].ti, outs[oi].gen, outs[oi].t, outs[oi].data); err != nil {
			return err
		}
	}
	info := dumpinfo.Info{Writer: name, StartNs: startNs, EndNs: endNs, CreatedNs: time.Now().UnixNano(),
		Labels: map[string]string{RecordModeLabel: l.opts.Mode.String(), RecordOfLabel: strings.Join(l.paths, ",")}}
	for _, ti := range order {
		info.Topics = append(info.Topics, *accounts[ti])
	}
	if err := w.SetInfo(info); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// typed reports whether t says how its messages are encoded (not raw
// bytes, not a name alone).
func typed(t ingest.Type) bool {
	return t.MessageEncoding != "" && t.MessageEncoding != ingest.EncodingRaw
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) {
		return nil // a file system that cannot sync directories
	}
	return err
}
