package dumpfile

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// Problem is one damaged region or inconsistency, where it starts.
type Problem struct {
	Offset int64
	Reason string
}

// VerifyResult is what Verify found in a dump of either format.
type VerifyResult struct {
	Path   string
	Format string // FormatPack or FormatMCAP
	Size   int64
	// Records is the intact frames (pack) or chunks (MCAP); Messages the
	// messages in them.
	Records  int
	Messages uint64
	// Complete: the file was closed (pack: index and trailer; MCAP: a
	// footer and, when it has one, a summary that agrees with the data).
	Complete bool
	Problems []Problem
	// Salvageable: recover would keep something of a file that is not
	// OK (pack: an intact frame or metadata section; MCAP: a message or
	// metadata record, found by a trial recovery that writes nothing).
	// verify suggests recover only then.
	Salvageable bool
}

// OK reports whether the file is intact and complete.
func (v *VerifyResult) OK() bool { return len(v.Problems) == 0 && v.Complete }

// Verify checks a pack or MCAP dump. A pack file is checked by pack.Verify:
// every frame, past damaged regions too. An MCAP file is read record by
// record by mcap.Reader.Verify (every chunk CRC, the data section CRC, what
// chunks hold, message and chunk indexes, attachments, the Footer and
// closing magic), its summary CRC checked and the summary's statistics
// compared with the data; an MCAP reader cannot locate records after a
// damaged one, so the data section's first problem is reported (and the
// summary's). The error is for files that cannot be read at all.
func Verify(path string) (*VerifyResult, error) {
	f, err := detectFile(path)
	if err != nil {
		return nil, err
	}
	if f.verify == nil {
		return nil, fmt.Errorf("%s: %w", path, errNotADump(f.Name))
	}
	return f.verify(path)
}

func verifyPack(path string) (*VerifyResult, error) {
	rep, err := pack.VerifyWith(path, packOptions())
	if err != nil {
		return nil, err
	}
	v := &VerifyResult{Path: path, Format: FormatPack, Size: rep.Size, Records: rep.Frames, Messages: rep.Messages, Complete: rep.Complete,
		Salvageable: rep.Frames > 0 || rep.Metadata > 0} // what pack.Recover copies: its walk is Verify's
	for _, p := range rep.Problems {
		v.Problems = append(v.Problems, Problem{Offset: p.Offset, Reason: p.Reason})
	}
	return v, nil
}

func verifyMCAP(path string) (v *VerifyResult, err error) {
	defer func() {
		if v != nil && !v.OK() {
			v.Salvageable = mcapSalvageable(path)
		}
	}()
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	v = &VerifyResult{Path: path, Format: FormatMCAP, Size: st.Size(), Complete: true}
	r, err := mcap.Open(path, mcapOptions())
	if err != nil {
		if ce := (*mcap.CorruptError)(nil); errors.As(err, &ce) {
			v.Complete = false
			v.Problems = append(v.Problems, mcapProblem(ce))
			return v, nil
		}
		return nil, err
	}
	defer r.Close()
	problem := func(err error) {
		pr := Problem{Reason: err.Error()}
		var ce *mcap.CorruptError
		if errors.As(err, &ce) {
			pr = mcapProblem(ce)
		}
		for _, seen := range v.Problems {
			if seen == pr { // a file without a summary is scanned twice
				return
			}
		}
		v.Problems = append(v.Problems, pr)
	}
	data, err := r.Verify()
	if data != nil {
		v.Records, v.Messages = data.Chunks, data.Messages
	}
	if err != nil {
		problem(err)
		if errors.Is(err, mcap.ErrTruncated) {
			v.Complete = false
		}
		data = nil
	}
	sum, err := r.Info()
	switch {
	case err != nil:
		problem(err)
	case !sum.Scanned && data != nil && (sum.Messages != data.Messages || sum.Chunks != data.Chunks):
		v.Problems = append(v.Problems, Problem{Reason: fmt.Sprintf("summary says %d messages in %d chunks, the data section holds %d in %d",
			sum.Messages, sum.Chunks, data.Messages, data.Chunks)})
	}
	return v, nil
}

func mcapProblem(ce *mcap.CorruptError) Problem {
	return Problem{Offset: ce.Offset, Reason: ce.Field + ": " + ce.Err.Error()}
}

// mcapSalvageable reports whether mcap.Recover keeps any message or
// metadata record of the MCAP file at path: a trial recovery that writes
// nothing (verify reads a damaged file once more to say so).
func mcapSalvageable(path string) bool {
	b, release, err := pack.MapFile(path)
	if err != nil {
		return false
	}
	defer release()
	rep, err := mcap.Recover(path, b, io.Discard, mcap.RecoverOptions{ReaderOptions: mcapOptions(), Compression: "none"})
	return err == nil && (rep.Messages > 0 || rep.Metadata > 0)
}
