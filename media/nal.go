package media

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// NAL unit types this package looks at.
const (
	h264NalIDR = 5
	h264NalSPS = 7
	h264NalPPS = 8
	h264NalAUD = 9

	h265NalVPS = 32
	h265NalSPS = 33
	h265NalPPS = 34
	h265NalAUD = 35
)

// startCode is the Annex B start code this package writes.
var startCode = [4]byte{0, 0, 0, 1}

// nalType returns the NAL unit type of a NAL unit (its header).
func nalType(c Codec, nal []byte) int {
	if len(nal) == 0 {
		return -1
	}
	if c == CodecH265 {
		return int(nal[0]>>1) & 0x3F
	}
	return int(nal[0]) & 0x1F
}

func isParameterSet(c Codec, typ int) bool {
	if c == CodecH265 {
		return typ == h265NalVPS || typ == h265NalSPS || typ == h265NalPPS
	}
	return typ == h264NalSPS || typ == h264NalPPS
}

func isAUD(c Codec, typ int) bool {
	if c == CodecH265 {
		return typ == h265NalAUD
	}
	return typ == h264NalAUD
}

// appendAnnexB appends a NAL unit with a 4-byte start code.
func appendAnnexB(dst, nal []byte) []byte {
	dst = append(dst, startCode[:]...)
	return append(dst, nal...)
}

var errShortConfig = errors.New("decoder configuration record truncated")

// parseAvcC reads an AVCDecoderConfigurationRecord (ISO/IEC 14496-15):
// the NAL length size and the SPS and PPS in Annex B.
func parseAvcC(b []byte) (nalLen int, params []byte, err error) {
	if len(b) < 7 {
		return 0, nil, errShortConfig
	}
	if b[0] != 1 {
		return 0, nil, fmt.Errorf("avcC configurationVersion %d", b[0])
	}
	nalLen = int(b[4]&3) + 1
	p := 5
	for list := 0; list < 2; list++ {
		if p >= len(b) {
			return 0, nil, errShortConfig
		}
		n := int(b[p])
		if list == 0 {
			n &= 0x1F
		}
		p++
		for i := 0; i < n; i++ {
			if p+2 > len(b) {
				return 0, nil, errShortConfig
			}
			l := int(binary.BigEndian.Uint16(b[p:]))
			p += 2
			if p+l > len(b) {
				return 0, nil, errShortConfig
			}
			if l > 0 {
				params = appendAnnexB(params, b[p:p+l])
			}
			p += l
		}
	}
	return nalLen, params, nil
}

// hvcC header: 22 bytes up to numOfArrays; lengthSizeMinusOne in byte 21.
const (
	hvcCLengthSize = 21
	hvcCArrays     = 22
)

// parseHvcC reads an HEVCDecoderConfigurationRecord: the NAL length size
// and the VPS, SPS and PPS arrays in Annex B (other arrays, such as SEI,
// are left out).
func parseHvcC(b []byte) (nalLen int, params []byte, err error) {
	if len(b) < hvcCArrays+1 {
		return 0, nil, errShortConfig
	}
	if b[0] > 1 {
		return 0, nil, fmt.Errorf("hvcC configurationVersion %d", b[0])
	}
	nalLen = int(b[hvcCLengthSize]&3) + 1
	var sets [3][]byte // VPS, SPS, PPS
	p := hvcCArrays + 1
	for a := 0; a < int(b[hvcCArrays]); a++ {
		if p+3 > len(b) {
			return 0, nil, errShortConfig
		}
		typ := int(b[p] & 0x3F)
		n := int(binary.BigEndian.Uint16(b[p+1:]))
		p += 3
		for i := 0; i < n; i++ {
			if p+2 > len(b) {
				return 0, nil, errShortConfig
			}
			l := int(binary.BigEndian.Uint16(b[p:]))
			p += 2
			if p+l > len(b) {
				return 0, nil, errShortConfig
			}
			if l > 0 && typ >= h265NalVPS && typ <= h265NalPPS {
				sets[typ-h265NalVPS] = appendAnnexB(sets[typ-h265NalVPS], b[p:p+l])
			}
			p += l
		}
	}
	return nalLen, append(append(sets[0], sets[1]...), sets[2]...), nil
}

// nextNAL returns the first NAL unit of Annex B data b and what follows
// it. Start codes of 3 or 4 bytes are accepted; trailing zero bytes of a
// NAL unit belong to the next start code (the standard forbids a NAL unit
// ending in 0x00). ok is false when b holds no more NAL units.
func nextNAL(b []byte) (nal, rest []byte, ok bool) {
	i := findStart(b, 0)
	if i < 0 {
		return nil, nil, false
	}
	begin := i + 3
	j := findStart(b, begin)
	end := len(b)
	if j >= 0 {
		end = j
	}
	nal = b[begin:end]
	for len(nal) > 0 && nal[len(nal)-1] == 0 {
		nal = nal[:len(nal)-1]
	}
	if j < 0 {
		return nal, nil, true
	}
	return nal, b[j:], true
}

// findStart returns the index of the next 00 00 01 at or after from, or -1.
func findStart(b []byte, from int) int {
	for i := from; i+3 <= len(b); {
		switch {
		case b[i+2] > 1:
			i += 3
		case b[i+2] == 1:
			if b[i] == 0 && b[i+1] == 0 {
				return i
			}
			i += 3
		default: // b[i+2] == 0
			i++
		}
	}
	return -1
}

// H.265 IRAP pictures (BLA, IDR, CRA and reserved IRAP types).
const (
	h265FirstIRAP = 16
	h265LastIRAP  = 23
)

// KeyFrame reports whether Annex B data holds a picture a decoder can
// start from: an IDR slice (H.264, NAL type 5) or an IRAP picture (H.265,
// NAL types 16 to 23). foxglove.CompressedVideo carries no key-frame flag;
// this is how a writer of messages back into MP4 gets one. It does not
// allocate.
func KeyFrame(c Codec, annexB []byte) bool {
	for rest := annexB; ; {
		nal, r, ok := nextNAL(rest)
		if !ok {
			return false
		}
		rest = r
		t := nalType(c, nal)
		if c == CodecH265 && t >= h265FirstIRAP && t <= h265LastIRAP || c == CodecH264 && t == h264NalIDR {
			return true
		}
	}
}
