package pack

import "runtime/debug"

// CodecStats says how a file's frames are compressed: frames per codec and
// the data bytes stored against their uncompressed size.
type CodecStats struct {
	Frames      map[Compression]int
	StoredBytes int64 // data sections as stored in the file
	RawBytes    int64 // the same, uncompressed
}

// Codecs reads every frame's header (through the index; no data pages are
// touched) and counts the codecs in use. Frames whose header does not parse
// are left out (Verify reports them).
func (r *Reader) Codecs() (st CodecStats) {
	var fault error
	defer zeroOnFault(&fault, &st)
	defer r.guard(&fault, nil, debug.SetPanicOnFault(true))
	st = CodecStats{Frames: map[Compression]int{}}
	for _, off := range r.FrameOffsets() {
		if off < 0 || off >= r.end {
			continue
		}
		var h frameHeader
		if _, err := parseFrameHeader(r.data[off:r.end], &h); err != nil {
			continue
		}
		st.Frames[h.codec]++
		st.StoredBytes += int64(h.stored)
		st.RawBytes += int64(h.rawLen)
	}
	return st
}
