package dumpfile

import (
	"errors"
	"fmt"
	"github.com/edr-lite/edr-lite/evidence"
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
	Format   string // FormatPack, FormatMCAP or FormatMP4
	Records  int    // intact frames (pack) or chunks (MCAP) copied; MP4: samples
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
	Attachments     int    // attachments copied
	// Notes say what else was not carried (MP4: tracks other than the
	// video track), one line each.
	Notes []string
}

// Recover salvages the dump at in (pack or MCAP; damaged, truncated or a
// leftover .tmp) into a new file at out of the same format: pack.Recover
// (every intact frame, the index rebuilt) or mcap.RecoverFile (every
// intact chunk, the summary rebuilt). out always verifies. An MP4 (cut
// short) is remuxed: every sample of its video track wholly in the file,
// into a valid MP4 (recoverMP4).
func Recover(in, out string) (*RecoverResult, error) {
	return RecoverStamped(in, out, nil)
}

// RecoverStamped is Recover writing stamp into out (RewriteOptions.Stamp):
// pack and MCAP dumps only.
func RecoverStamped(in, out string, stamp *Stamp) (*RecoverResult, error) {
	f, err := detectFile(in)
	if err != nil {
		return nil, err
	}
	if f.recover == nil {
		return nil, fmt.Errorf("%s: %w", in, errNotADump(f.Name))
	}
	switch {
	case stamp == nil:
		return f.recover(in, out)
	case f.Name == FormatPack:
		return recoverPackStamped(in, out, stamp)
	case f.Name == FormatMCAP:
		return recoverMCAPStamped(in, out, stamp)
	}
	return nil, fmt.Errorf("%s is %s file: a salvage of it carries no provenance or signature", in, f.title)
}

func recoverPack(in, out string) (*RecoverResult, error) { return recoverPackStamped(in, out, nil) }

func recoverPackStamped(in, out string, stamp *Stamp) (*RecoverResult, error) {
	rep, err := pack.RecoverStamped(in, out, pack.ReaderOptions{MaxMemory: MaxMemory()}, stamp.sealer(evidence.FormatPack), stamp.metadata())
	if err != nil {
		return nil, err
	}
	if rep.HeaderRebuilt && rep.Frames == 0 && rep.Metadata == 0 {
		os.Remove(out)
		return nil, fmt.Errorf("%s: no pack header, frame or section found: not a pack dump (nothing salvaged)", in)
	}
	r := &RecoverResult{Format: FormatPack, Records: rep.Frames, Messages: rep.Messages, Metadata: rep.Metadata,
		HeaderRebuilt: rep.HeaderRebuilt, LostRecords: rep.LostFrames, LostBytes: rep.LostBytes, Attachments: rep.Attachments}
	for _, l := range rep.Lost {
		r.Lost = append(r.Lost, Lost{Offset: l.Offset, Length: l.Length, Records: l.Frames, Messages: -1,
			FromNs: l.FromNs, ToNs: l.ToNs, Reason: l.Reason})
	}
	return r, nil
}

func recoverMCAP(in, out string) (*RecoverResult, error) { return recoverMCAPStamped(in, out, nil) }

func recoverMCAPStamped(in, out string, stamp *Stamp) (*RecoverResult, error) {
	rep, err := mcap.RecoverFile(in, out, mcap.RecoverOptions{ReaderOptions: mcapOptions(),
		Seal: stamp.sealer(evidence.FormatMCAP), Metadata: stamp.mcapMetadata()})
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
	switch {
	case d.LostChunks == 0 && d.LostMessages == 0 && d.LostBytes > 0:
		s += fmt.Sprintf("; the %d bytes from there could not be read", d.LostBytes)
	case d.LostChunks > 0 || d.LostBytes > 0:
		chunks := "chunks"
		if d.LostChunks == 1 {
			chunks = "chunk"
		}
		s += fmt.Sprintf("; %d bytes unreadable (%d %s", d.LostBytes, d.LostChunks, chunks)
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
	var ce *mcap.CorruptError
	corrupt := errors.As(first, &ce)
	switch {
	case len(rep.Lost) > 0:
		d.Offset, d.Reason = rep.Lost[0].Offset, rep.Lost[0].Reason
	case corrupt:
		d.Offset, d.Reason = ce.Offset, ce.Field+": "+ce.Err.Error()
	default:
		d.Reason = first.Error()
	}
	// Cut short with nothing lost: unless the first problem is another
	// than the cut (a Header that is not one), say so plainly.
	if rep.Truncated && len(rep.Lost) == 0 && (!corrupt || errors.Is(ce.Err, mcap.ErrTruncated)) {
		d.Reason = "the file ends before its footer (cut short, or never closed)"
	}
	return tmp, d, nil
}

// salvageIfDamaged is, with SetSkipDamaged on, the path of a salvaged copy
// of the MCAP file at path when it does not verify (its damage reported),
// "" when it does: an MCAP reader cannot find the records past a damaged
// one, so reading past damage reads what recover keeps.
func salvageIfDamaged(path string) (string, error) {
	v, err := verifyMCAP(path)
	if err != nil || len(v.Problems) == 0 {
		return "", err
	}
	tmp, d, err := salvageMCAP(path, fmt.Errorf("%s", v.Problems[0].Reason))
	if err != nil {
		return "", err
	}
	if fn := skipDamaged.Load(); fn != nil {
		(*fn)(path, "what its damage hides ("+d.String()+"), reading what a salvaged copy holds")
	}
	return tmp, nil
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
