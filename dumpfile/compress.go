package dumpfile

import (
	"errors"
	"fmt"
	"github.com/edr-lite/edr-lite/evidence"
	"io"
	"os"

	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// CompressReport says what Compress wrote.
type CompressReport struct {
	Format   string // FormatPack or FormatMCAP, as the input
	Records  int    // frames or chunks written
	Messages uint64
	InSize   int64
	OutSize  int64
}

// Compress re-encodes the dump at in with another compression ("none",
// "lz4" or "zstd") into a new file out of the same format, losing nothing:
// a pack dump frame by frame (each frame's messages, times, ids and type as
// they were; its header's writer and creation time; every metadata
// section, the dump information as it was, every attachment where it
// was), an MCAP file record by record (mcap.Recover of an intact file:
// schemas, channels, messages with their sequence numbers and times,
// attachments, metadata, in file order, chunked again). A damaged input is
// an error and leaves no output. progress, when not nil, gets the
// messages written so far every 4096 frames (pack) and at the end.
func Compress(in, out, compression string, progress func(done uint64)) (*CompressReport, error) {
	return CompressStamped(in, out, compression, nil, progress)
}

// CompressStamped is Compress writing stamp into out (RewriteOptions.Stamp).
func CompressStamped(in, out, compression string, stamp *Stamp, progress func(done uint64)) (*CompressReport, error) {
	f, err := detectFile(in)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(in)
	if err != nil {
		return nil, err
	}
	var rep *CompressReport
	switch f.Name {
	case FormatPack:
		rep, err = compressPack(in, out, compression, stamp, progress)
	case FormatMCAP:
		rep, err = compressMCAP(in, out, compression, stamp)
	default:
		return nil, fmt.Errorf("dumpfile: cannot compress a %s file", f.title)
	}
	if err != nil {
		return nil, err
	}
	rep.InSize = st.Size()
	if st, err := os.Stat(out); err == nil {
		rep.OutSize = st.Size()
	}
	if progress != nil {
		progress(rep.Messages)
	}
	return rep, nil
}

func packCompression(name string) (pack.Compression, error) {
	switch name {
	case "", "none":
		return pack.CompressNone, nil
	case "lz4":
		return pack.CompressLZ4, nil
	case "zstd":
		return pack.CompressZstd, nil
	}
	return 0, fmt.Errorf("dumpfile: compression %q: want none, lz4 or zstd", name)
}

func compressPack(in, out, compression string, stamp *Stamp, progress func(uint64)) (*CompressReport, error) {
	c, err := packCompression(compression)
	if err != nil {
		return nil, err
	}
	if v, err := pack.Verify(in); err != nil {
		return nil, err
	} else if len(v.Problems) > 0 {
		return nil, fmt.Errorf("%s is damaged (offset %d: %s): salvage it with edr-lite recover first", in, v.Problems[0].Offset, v.Problems[0].Reason)
	}
	r, err := pack.Open(in)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	h := r.Header()
	tmp := out + ".tmp"
	w, err := pack.Create(tmp, pack.WriterOptions{Writer: h.Writer, CreatedNs: h.CreatedNs, Compression: c,
		Seal: stamp.sealer(evidence.FormatPack), FinalMetadata: stamp.metadata()})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*CompressReport, error) {
		w.Close()
		os.Remove(tmp)
		return nil, err
	}
	rep := &CompressReport{Format: FormatPack}
	// The type sections go before the frames they preceded, so each
	// topic's type, and where it changes, survive.
	types, err := r.Types()
	if err != nil {
		return fail(err)
	}
	atts, err := r.Attachments()
	if err != nil {
		return fail(err)
	}
	attach := func(before int64) error { // the attachments before offset before, in place
		for len(atts) > 0 && atts[0].Offset < before {
			if err := w.AddAttachment(atts[0]); err != nil {
				return fmt.Errorf("%s: %w", out, err)
			}
			atts = atts[1:]
		}
		return nil
	}
	var f pack.Frame
	for {
		if err := r.ReadInto(&f); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fail(err)
		}
		for len(types) > 0 && types[0].Offset < r.Tell() {
			tt := &types[0]
			if err := w.SetTopicType(tt.Name, tt.Channel, tt.Type, tt.FromNs); err != nil {
				return fail(fmt.Errorf("%s: %w", out, err))
			}
			types = types[1:]
		}
		if err := attach(r.Tell()); err != nil {
			return fail(err)
		}
		if err := w.WriteFrame(&f); err != nil {
			return fail(fmt.Errorf("%s: %w", out, err))
		}
		rep.Records++
		rep.Messages += uint64(f.Len())
		if progress != nil && rep.Records%4096 == 0 {
			progress(rep.Messages)
		}
	}
	if err := attach(r.Size()); err != nil {
		return fail(err)
	}
	for _, name := range r.MetadataNames() {
		if evidence.Stamped(name) {
			continue
		}
		b, _ := r.Metadata(name)
		if err := w.AddMetadata(name, b); err != nil {
			return fail(err)
		}
	}
	if err := w.Close(); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return rep, nil
}

func compressMCAP(in, out, compression string, stamp *Stamp) (*CompressReport, error) {
	switch compression {
	case "", "none", mcap.CompressionLZ4, mcap.CompressionZstd:
	default:
		return nil, fmt.Errorf("dumpfile: compression %q: want none, lz4 or zstd", compression)
	}
	if compression == "" {
		compression = "none"
	}
	rep, err := mcap.RecoverFile(in, out, mcap.RecoverOptions{Compression: compression,
		Seal: stamp.sealer(evidence.FormatMCAP), Metadata: stamp.mcapMetadata()})
	if err != nil {
		return nil, err
	}
	var why string
	switch {
	case len(rep.Lost) > 0:
		why = fmt.Sprintf("%s is damaged (offset %d: %s): salvage it with edr-lite recover first", in, rep.Lost[0].Offset, rep.Lost[0].Reason)
	case rep.Truncated:
		why = fmt.Sprintf("%s ends before its footer: salvage it with edr-lite recover first", in)
	case rep.Orphans > 0:
		why = fmt.Sprintf("%s has %d messages on undefined channels", in, rep.Orphans)
	}
	if why != "" {
		os.Remove(out)
		return nil, errors.New(why)
	}
	r, err := mcap.Open(out, mcap.ReaderOptions{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	info, err := r.Info()
	if err != nil {
		return nil, err
	}
	return &CompressReport{Format: FormatMCAP, Records: info.Chunks, Messages: rep.Messages}, nil
}
