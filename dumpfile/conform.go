package dumpfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/edr-lite/edr-lite/dumpinfo"
	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// Conform checks a dump against its format's specification beyond what
// Verify checks (verify --strict, the MCAP CLI's "doctor"): for MCAP,
// mcap.Doctor; for pack, that the index's claims (time order, per-topic
// counts, bytes and times) match the frames, that reserved header flags
// are clear, that metadata names are unique, and that the dump
// information parses and agrees with the file (its window, each topic's
// message count and data bytes). Run it on a file Verify passed: the
// error is for a file that cannot be read at all.
func Conform(path string) ([]Problem, error) {
	f, err := detectFile(path)
	if err != nil {
		return nil, err
	}
	switch f.Name {
	case FormatMCAP:
		return conformMCAP(path)
	case FormatPack:
		return conformPack(path)
	}
	return nil, fmt.Errorf("dumpfile: %s: no conformance checks for %s", path, f.title)
}

func conformMCAP(path string) ([]Problem, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Problem
	for _, ce := range mcap.Doctor(path, b, mcap.ReaderOptions{}) {
		pr := mcapProblem(ce)
		pr.Reason = strings.Replace(pr.Reason, mcap.ErrNonconformant.Error()+": ", "", 1)
		out = append(out, pr)
	}
	return out, nil
}

func conformPack(path string) ([]Problem, error) {
	r, err := pack.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Problem
	bad := func(off int64, format string, a ...any) {
		out = append(out, Problem{Offset: off, Reason: fmt.Sprintf(format, a...)})
	}
	sum := r.Summary()
	if sum.Header.Flags != 0 {
		bad(12, "header flags 0x%x: reserved bits set", sum.Header.Flags)
	}
	type stat struct {
		messages, bytes, data uint64
		first, last           int64
	}
	stats := map[string]*stat{}
	var f pack.Frame
	var prev int64
	sorted := true
	for n := 0; ; n++ {
		if err := r.ReadInto(&f); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		if n > 0 && f.Time() < prev {
			sorted = false
		}
		prev = f.Time()
		for i := range f.Len() {
			m := f.Message(i)
			k := pack.Topic(m.Name, m.Channel)
			ts := m.GenTs
			if ts == 0 {
				ts = f.Time()
			}
			s := stats[k]
			if s == nil {
				s = &stat{first: ts, last: ts}
				stats[k] = s
			}
			s.messages++
			s.bytes += uint64(len(m.Meta) + len(f.Data(i)))
			s.data += uint64(len(f.Data(i)))
			s.first, s.last = min(s.first, ts), max(s.last, ts)
		}
	}
	if sum.Indexed {
		if sum.TimeSorted && !sorted {
			bad(sum.Size, "index: says frame times never decrease, they do")
		}
		for _, t := range sum.Topics {
			s := stats[t.Topic]
			switch {
			case s == nil:
				bad(sum.Size, "index: topic %s has %d messages, the frames none", t.Topic, t.Messages)
			case s.messages != t.Messages || s.bytes != t.Bytes || s.first != t.FirstNs || s.last != t.LastNs:
				bad(sum.Size, "index: topic %s: %d messages, %d bytes, %d..%d; the frames hold %d, %d, %d..%d",
					t.Topic, t.Messages, t.Bytes, t.FirstNs, t.LastNs, s.messages, s.bytes, s.first, s.last)
			}
		}
		if len(sum.Topics) != len(stats) {
			bad(sum.Size, "index: %d topics, the frames hold %d", len(sum.Topics), len(stats))
		}
	}
	seen := map[string]bool{}
	for _, n := range sum.Metadata {
		if seen[n] {
			bad(sum.Size, "metadata %q appears more than once", n)
		}
		seen[n] = true
	}
	raw, has := r.Metadata(dumpinfo.MetadataName)
	if !has {
		return out, nil
	}
	var d dumpinfo.Info
	if err := json.Unmarshal(raw, &d); err != nil {
		bad(sum.Size, "dump info (%s) does not parse: %v", dumpinfo.MetadataName, err)
		return out, nil
	}
	if d.StartNs > d.EndNs {
		bad(sum.Size, "dump info: window start %d is after its end %d", d.StartNs, d.EndNs)
	}
	for _, a := range d.Topics {
		k := pack.Topic(pack.SplitTopic(a.Topic))
		var msgs, data uint64
		if s := stats[k]; s != nil {
			msgs, data = s.messages, s.data
		}
		if a.Messages != msgs || a.Bytes != data {
			bad(sum.Size, "dump info: topic %s: %d messages, %d bytes; the file holds %d, %d", topicName(k), a.Messages, a.Bytes, msgs, data)
		}
	}
	return out, nil
}
