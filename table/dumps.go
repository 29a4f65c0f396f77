package table

import (
	"bufio"
	"os"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
)

// dumpRow is the one row of the dumps table.
type dumpRow struct {
	Dump      string       `parquet:"dump"`
	File      string       `parquet:"file"`
	Format    string       `parquet:"format"`
	Size      int64        `parquet:"size"`
	Writer    string       `parquet:"writer"`
	Host      string       `parquet:"host"`
	CreatedNs int64        `parquet:"created_ns"`
	StartNs   int64        `parquet:"start_ns"`
	EndNs     int64        `parquet:"end_ns"`
	StartTime int64        `parquet:"start_time,timestamp(microsecond:utc)"`
	EndTime   int64        `parquet:"end_time,timestamp(microsecond:utc)"`
	Messages  int64        `parquet:"messages"`
	Bytes     int64        `parquet:"bytes"`
	Lost      int64        `parquet:"lost"`
	Reasons   string       `parquet:"reasons"`
	TriggerNs *int64       `parquet:"trigger_ns,optional"`
	Triggers  []triggerRow `parquet:"triggers,list"`
	Topics    []topicRow   `parquet:"topics,list"`
	Labels    []labelRow   `parquet:"labels,list"`
	// The dump's signature and place in its chain (docs/evidence.md);
	// null when not known.
	Signature    *string `parquet:"signature,optional"`
	SignedBy     *string `parquet:"signed_by,optional"`
	Chain        *string `parquet:"chain,optional"`
	ChainCounter *int64  `parquet:"chain_counter,optional"`
	Seal         *string `parquet:"seal,optional"`
	SealPrev     *string `parquet:"seal_prev,optional"`
}

type triggerRow struct {
	ID       int64  `parquet:"id"`
	Reason   string `parquet:"reason"`
	Source   string `parquet:"source"`
	Rule     string `parquet:"rule"`
	Tag      string `parquet:"tag"`
	Severity int64  `parquet:"severity"`
	TimeNs   int64  `parquet:"time_ns"`
	// FromNs and ToNs are the trigger's effective window (the one it
	// selected, dumpinfo.Trigger.Window), null when the dump does not say;
	// PreNs and PostNs the overrides it set, null when it set none.
	FromNs *int64 `parquet:"from_ns,optional"`
	ToNs   *int64 `parquet:"to_ns,optional"`
	PreNs  *int64 `parquet:"pre_ns,optional"`
	PostNs *int64 `parquet:"post_ns,optional"`
}

type topicRow struct {
	Topic        string `parquet:"topic"`
	Type         string `parquet:"type"`
	Messages     int64  `parquet:"messages"`
	Bytes        int64  `parquet:"bytes"`
	Overwritten  int64  `parquet:"overwritten"`
	Oversize     int64  `parquet:"oversize"`
	SkippedBusy  int64  `parquet:"skipped_busy"`
	LostAtSource int64  `parquet:"lost_at_source"`
	FirstNs      int64  `parquet:"first_ns"`
	LastNs       int64  `parquet:"last_ns"`
}

type labelRow struct {
	Key   string `parquet:"key"`
	Value string `parquet:"value"`
}

func writeDumpRow(d *Dump, path string, codec compress.Codec, sync bool, mode os.FileMode) (File, error) {
	in := &d.Info
	r := dumpRow{Dump: d.ID, File: d.File, Format: d.Format, Size: d.Size, Writer: in.Writer, Host: in.Host,
		CreatedNs: in.CreatedNs, StartNs: in.StartNs, EndNs: in.EndNs, StartTime: floorDiv(in.StartNs, 1000),
		EndTime: floorDiv(in.EndNs, 1000), Triggers: []triggerRow{}, Topics: []topicRow{}, Labels: []labelRow{}}
	var reasons []string
	for _, t := range in.Triggers {
		tr := triggerRow{ID: int64(t.ID), Reason: t.Reason, Source: t.Source, Rule: t.Rule, Tag: t.Tag,
			Severity: int64(t.Severity), TimeNs: t.TimeNs}
		if from, to, _, _, ok := t.Window(); ok {
			tr.FromNs, tr.ToNs = &from, &to
		}
		if v, ok := t.Pre(); ok {
			tr.PreNs = &v
		}
		if v, ok := t.Post(); ok {
			tr.PostNs = &v
		}
		r.Triggers = append(r.Triggers, tr)
		reasons = append(reasons, t.Reason)
	}
	r.Reasons = strings.Join(reasons, ",")
	if len(in.Triggers) > 0 {
		r.TriggerNs = &in.Triggers[0].TimeNs
	}
	for _, a := range in.Topics {
		r.Topics = append(r.Topics, topicRow{Topic: a.Topic, Type: a.Type, Messages: int64(a.Messages), Bytes: int64(a.Bytes),
			Overwritten: int64(a.Overwritten), Oversize: int64(a.Oversize), SkippedBusy: int64(a.SkippedBusy),
			LostAtSource: int64(a.LostAtSource), FirstNs: a.FirstNs, LastNs: a.LastNs})
		r.Messages += int64(a.Messages)
		r.Bytes += int64(a.Bytes)
		r.Lost += int64(a.Overwritten + a.Oversize + a.SkippedBusy + a.LostAtSource)
	}
	if len(in.Topics) == 0 {
		for _, t := range d.Topics {
			r.Messages += int64(t.Messages)
		}
	}
	keys := make([]string, 0, len(in.Labels))
	for k := range in.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		r.Labels = append(r.Labels, labelRow{Key: k, Value: in.Labels[k]})
	}
	if s := d.Seal; s != nil {
		str := func(v string) *string {
			if v == "" {
				return nil
			}
			return &v
		}
		r.Signature, r.SignedBy, r.Chain, r.Seal, r.SealPrev = str(s.Status), str(s.KeyID), str(s.Chain), str(s.ID), str(s.Prev)
		if s.Counter > 0 {
			n := int64(s.Counter)
			r.ChainCounter = &n
		}
	}
	out := File{Table: Dumps, Path: path, Rows: 1}
	f, err := createFile(path, mode)
	if err != nil {
		return out, err
	}
	bw := bufio.NewWriter(f)
	w := parquet.NewGenericWriter[dumpRow](bw, parquet.Compression(codec), parquet.CreatedBy("edr-lite", "", ""))
	_, err = w.Write([]dumpRow{r})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if sync {
		if serr := f.Sync(); err == nil {
			err = serr
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if st, serr := os.Stat(path); serr == nil {
		out.Size = st.Size()
	}
	return out, err
}
