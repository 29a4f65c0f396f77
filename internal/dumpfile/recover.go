package dumpfile

import (
	"errors"
	"fmt"
	"os"

	"github.com/edr-lite/edr-lite/mcap"
	"github.com/edr-lite/edr-lite/pack"
)

// Lost is one damaged region a recovery could not salvage.
type Lost struct {
	Offset, Length int64
	// Records lost: frames (pack) or chunks (MCAP) in the region.
	Records int
	// Messages lost in the region when known (MCAP: from the chunk's
	// records or its message indexes), -1 when not.
	Messages int64
	// FromNs..ToNs bounds the lost records' times (0 when unknown).
	FromNs, ToNs int64
	Reason       string
}

// RecoverResult says what Recover salvaged and lost, in either format.
type RecoverResult struct {
	Format   string // FormatPack or FormatMCAP
	Records  int    // intact frames (pack) or chunks (MCAP) copied
	Messages uint64
	Metadata int
	// HeaderRebuilt: the pack file's header was damaged and rebuilt.
	HeaderRebuilt bool
	// PartialMessages: MCAP messages salvaged from a chunk cut by the end
	// of the file (no CRC can vouch for them).
	PartialMessages uint64
	Truncated       bool // MCAP: the file ended before its footer
	LostRecords     int
	LostBytes       int64
	LostMessages    uint64 // the known part
	Lost            []Lost
	Orphans         uint64 // MCAP messages whose channel record was lost
	Attachments     int    // MCAP attachments not carried over
}

// Recover salvages the dump at in (pack or MCAP; damaged, truncated or a
// leftover .tmp) into a new file at out of the same format: pack.Recover
// (every intact frame, the index rebuilt) or mcap.RecoverFile (every
// intact chunk, the summary rebuilt). out always verifies.
func Recover(in, out string) (*RecoverResult, error) {
	f, err := detectFile(in)
	if err != nil {
		return nil, err
	}
	return f.recover(in, out)
}

func recoverPack(in, out string) (*RecoverResult, error) {
	rep, err := pack.RecoverWith(in, out, pack.ReaderOptions{MaxMemory: MaxMemory()})
	if err != nil {
		return nil, err
	}
	if rep.HeaderRebuilt && rep.Frames == 0 && rep.Metadata == 0 {
		os.Remove(out)
		return nil, fmt.Errorf("%s: no pack header, frame or section found: not a pack dump (nothing salvaged)", in)
	}
	r := &RecoverResult{Format: FormatPack, Records: rep.Frames, Messages: rep.Messages, Metadata: rep.Metadata,
		HeaderRebuilt: rep.HeaderRebuilt, LostRecords: rep.LostFrames, LostBytes: rep.LostBytes}
	for _, l := range rep.Lost {
		r.Lost = append(r.Lost, Lost{Offset: l.Offset, Length: l.Length, Records: l.Frames, Messages: -1,
			FromNs: l.FromNs, ToNs: l.ToNs, Reason: l.Reason})
	}
	return r, nil
}

func recoverMCAP(in, out string) (*RecoverResult, error) {
	rep, err := mcap.RecoverFile(in, out, mcap.RecoverOptions{ReaderOptions: mcapOptions()})
	if err != nil {
		return nil, err
	}
	r := &RecoverResult{Format: FormatMCAP, Records: rep.Chunks, Messages: rep.Messages, Metadata: rep.Metadata,
		PartialMessages: rep.PartialMessages, Truncated: rep.Truncated, LostRecords: rep.LostChunks,
		LostBytes: rep.LostBytes, LostMessages: rep.LostMessages, Orphans: rep.Orphans, Attachments: rep.Attachments}
	for _, l := range rep.Lost {
		r.Lost = append(r.Lost, Lost{Offset: l.Offset, Length: l.Length, Records: l.Chunks, Messages: l.Messages,
			FromNs: clampTime(l.FromNs), ToNs: clampTime(l.ToNs), Reason: l.Reason})
	}
	return r, nil
}

func clampTime(t uint64) int64 { return int64(min(t, 1<<63-1)) }

// Damage says what a damaged or truncated MCAP file lacks when it is read
// through a salvaged copy (ReadInfo, OpenSalvaged).
type Damage struct {
	// Offset and Reason: the first problem found.
	Offset int64  `json:"offset"`
	Reason string `json:"reason"`
	// Truncated: the file ends before its footer.
	Truncated bool `json:"truncated,omitempty"`
	// LostBytes, LostChunks and LostMessages (those known) could not be
	// read; Orphans are messages whose channel record was lost.
	LostBytes    int64  `json:"lost_bytes"`
	LostChunks   int    `json:"lost_chunks"`
	LostMessages uint64 `json:"lost_messages"`
	Orphans      uint64 `json:"orphans,omitempty"`
}

// String says it in one line.
func (d *Damage) String() string {
	s := fmt.Sprintf("offset %d: %s", d.Offset, d.Reason)
	if d.LostChunks > 0 || d.LostBytes > 0 {
		s += fmt.Sprintf("; %d bytes unreadable (%d chunks", d.LostBytes, d.LostChunks)
		if d.LostMessages > 0 {
			s += fmt.Sprintf(", at least %d messages", d.LostMessages)
		}
		s += ")"
	}
	if d.Orphans > 0 {
		s += fmt.Sprintf("; %d messages on channels defined in a lost region", d.Orphans)
	}
	return s
}

// salvageMCAP recovers the MCAP file at path (mcap.RecoverFile, chunks
// uncompressed) into a temporary file the caller removes, and says what
// the copy lacks; first is the error reading the file as it is.
func salvageMCAP(path string, first error) (tmp string, d *Damage, err error) {
	f, err := os.CreateTemp("", "edr-lite-salvage-*.mcap")
	if err != nil {
		return "", nil, err
	}
	tmp = f.Name()
	f.Close()
	os.Remove(tmp) // RecoverFile creates it anew, through tmp.tmp
	rep, err := mcap.RecoverFile(path, tmp, mcap.RecoverOptions{Compression: "none"})
	if err != nil {
		return "", nil, err
	}
	d = &Damage{Truncated: rep.Truncated, LostBytes: rep.LostBytes, LostChunks: rep.LostChunks, LostMessages: rep.LostMessages, Orphans: rep.Orphans}
	switch ce := (*mcap.CorruptError)(nil); {
	case len(rep.Lost) > 0:
		d.Offset, d.Reason = rep.Lost[0].Offset, rep.Lost[0].Reason
	case errors.As(first, &ce):
		d.Offset, d.Reason = ce.Offset, ce.Field+": "+ce.Err.Error()
	default:
		d.Reason = first.Error()
	}
	if rep.Truncated && len(rep.Lost) == 0 {
		d.Reason = "the file ends before its footer (cut short, or never closed)"
	}
	return tmp, d, nil
}

// OpenSalvaged is Open, except that an MCAP file that cannot be read as it
// is (truncated, damaged) is read through a salvaged copy: mcap.Recover
// into a temporary file that Close removes. damage says what the copy
// lacks; it is nil when the file was read as it is.
func OpenSalvaged(path string) (s *Source, damage *Damage, err error) {
	s, err = Open(path)
	var ce *mcap.CorruptError
	if err == nil || !errors.As(err, &ce) || s != nil {
		return s, nil, err
	}
	if f, derr := Detect(path); derr != nil || f != FormatMCAP {
		return nil, nil, err
	}
	tmp, damage, rerr := salvageMCAP(path, err)
	if rerr != nil {
		return nil, nil, err
	}
	s, serr := Open(tmp)
	if serr != nil {
		os.Remove(tmp)
		return nil, nil, err
	}
	s.Path, s.remove = path, tmp
	return s, damage, nil
}

// OpenAllSalvaged is OpenAll through OpenSalvaged; damage is reported per
// file that needed salvaging.
func OpenAllSalvaged(paths []string, damaged func(path string, d *Damage)) ([]*Source, error) {
	var srcs []*Source
	for _, p := range paths {
		s, d, err := OpenSalvaged(p)
		if err != nil {
			CloseAll(srcs)
			return nil, err
		}
		if d != nil && damaged != nil {
			damaged(p, d)
		}
		srcs = append(srcs, s)
	}
	return srcs, nil
}
