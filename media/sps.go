package media

import "errors"

// errSPS: a parameter set ended early or holds an impossible value.
var errSPS = errors.New("SPS truncated or out of range")

// bitReader reads an RBSP (emulation prevention removed) bit by bit; a
// read past the end sets err and returns 0, so parsers check once.
type bitReader struct {
	b   []byte
	pos int // bit position
	err bool
}

func (r *bitReader) u(n int) uint32 {
	var v uint32
	for i := 0; i < n; i++ {
		if r.pos>>3 >= len(r.b) {
			r.err = true
			return 0
		}
		v = v<<1 | uint32(r.b[r.pos>>3]>>(7-r.pos&7))&1
		r.pos++
	}
	return v
}

func (r *bitReader) flag() bool { return r.u(1) == 1 }

// ue reads an Exp-Golomb code of at most 32 bits.
func (r *bitReader) ue() uint32 {
	zeros := 0
	for !r.err && r.u(1) == 0 {
		zeros++
		if zeros > 31 {
			r.err = true
			return 0
		}
	}
	if zeros == 0 {
		return 0
	}
	return (1<<zeros - 1) + r.u(zeros)
}

func (r *bitReader) se() int32 {
	v := r.ue()
	if v&1 == 1 {
		return int32(v/2 + 1)
	}
	return -int32(v / 2)
}

// unescapeRBSP removes emulation prevention bytes (00 00 03 -> 00 00).
func unescapeRBSP(dst, nal []byte) []byte {
	zeros := 0
	for _, c := range nal {
		if zeros >= 2 && c == 3 {
			zeros = 0
			continue
		}
		if c == 0 {
			zeros++
		} else {
			zeros = 0
		}
		dst = append(dst, c)
	}
	return dst
}

// spsInfo is what the MP4 writer needs from a sequence parameter set.
type spsInfo struct {
	width, height  int
	reorder        int // frames a decoder may hold back for reordering; -1 unknown
	chromaFormat   int
	bitDepthLuma   int // minus 8
	bitDepthChroma int // minus 8
	// H.265 only
	ptl            [12]byte // general profile_tier_level
	subLayers      int      // sps_max_sub_layers_minus1 + 1
	temporalIDNest bool
}

// H.264 profiles whose SPS carries chroma_format_idc and bit depths.
func h264HighProfile(p uint32) bool {
	switch p {
	case 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135:
		return true
	}
	return false
}

// parseH264SPS reads an H.264 SPS NAL unit (ITU-T H.264, 7.3.2.1.1, and
// E.1.1 for max_num_reorder_frames).
func parseH264SPS(nal []byte) (spsInfo, error) {
	info := spsInfo{reorder: -1, chromaFormat: 1}
	if len(nal) < 4 {
		return info, errSPS
	}
	r := &bitReader{b: unescapeRBSP(nil, nal[1:])}
	profile := r.u(8)
	r.u(16) // constraint flags, level
	r.ue()  // seq_parameter_set_id
	separate := false
	if h264HighProfile(profile) {
		info.chromaFormat = int(r.ue())
		if info.chromaFormat > 3 {
			return info, errSPS
		}
		if info.chromaFormat == 3 {
			separate = r.flag()
		}
		info.bitDepthLuma, info.bitDepthChroma = int(r.ue()), int(r.ue())
		r.u(1)        // qpprime_y_zero_transform_bypass_flag
		if r.flag() { // seq_scaling_matrix_present_flag
			lists := 8
			if info.chromaFormat == 3 {
				lists = 12
			}
			for i := 0; i < lists && !r.err; i++ {
				if !r.flag() {
					continue
				}
				size := 16
				if i >= 6 {
					size = 64
				}
				last, next := int32(8), int32(8)
				for j := 0; j < size && !r.err; j++ {
					if next != 0 {
						next = (last + r.se() + 256) % 256
					}
					if next != 0 {
						last = next
					}
				}
			}
		}
	}
	r.ue()          // log2_max_frame_num_minus4
	switch r.ue() { // pic_order_cnt_type
	case 0:
		r.ue()
	case 1:
		r.u(1)
		r.se()
		r.se()
		n := r.ue()
		if n > 255 {
			return info, errSPS
		}
		for i := uint32(0); i < n && !r.err; i++ {
			r.se()
		}
	}
	r.ue() // max_num_ref_frames
	r.u(1) // gaps_in_frame_num_value_allowed_flag
	wMbs := r.ue() + 1
	hMap := r.ue() + 1
	frameMbsOnly := r.flag()
	if !frameMbsOnly {
		r.u(1) // mb_adaptive_frame_field_flag
	}
	r.u(1) // direct_8x8_inference_flag
	var cl, cr, ct, cb uint32
	if r.flag() {
		cl, cr, ct, cb = r.ue(), r.ue(), r.ue(), r.ue()
	}
	if r.err || wMbs > 1<<16 || hMap > 1<<16 {
		return info, errSPS
	}
	fieldFactor := uint32(2)
	if frameMbsOnly {
		fieldFactor = 1
	}
	cropX, cropY := uint32(1), fieldFactor
	if !separate && info.chromaFormat != 0 {
		if info.chromaFormat != 3 {
			cropX = 2
		}
		if info.chromaFormat == 1 {
			cropY = 2 * fieldFactor
		}
	}
	info.width = int(wMbs*16) - int(cropX*(cl+cr))
	info.height = int(hMap*16*fieldFactor) - int(cropY*(ct+cb))
	if info.width <= 0 || info.height <= 0 {
		return info, errSPS
	}
	if r.flag() { // vui_parameters_present_flag
		parseH264VUI(r, &info)
	}
	if r.err {
		info.reorder = -1 // a truncated VUI: size known, reordering not
	}
	return info, nil
}

func parseH264VUI(r *bitReader, info *spsInfo) {
	if r.flag() { // aspect_ratio_info_present_flag
		if r.u(8) == 255 {
			r.u(32)
		}
	}
	if r.flag() { // overscan_info_present_flag
		r.u(1)
	}
	if r.flag() { // video_signal_type_present_flag
		r.u(4)
		if r.flag() {
			r.u(24)
		}
	}
	if r.flag() { // chroma_loc_info_present_flag
		r.ue()
		r.ue()
	}
	if r.flag() { // timing_info_present_flag
		r.u(32)
		r.u(32)
		r.u(1)
	}
	nalHRD := r.flag()
	if nalHRD {
		h264HRD(r)
	}
	vclHRD := r.flag()
	if vclHRD {
		h264HRD(r)
	}
	if nalHRD || vclHRD {
		r.u(1) // low_delay_hrd_flag
	}
	r.u(1)        // pic_struct_present_flag
	if r.flag() { // bitstream_restriction_flag
		r.u(1)
		r.ue()
		r.ue()
		r.ue()
		r.ue()
		reorder := r.ue()
		r.ue()
		if !r.err && reorder <= 16 {
			info.reorder = int(reorder)
		}
	}
}

// h264HRD skips hrd_parameters.
func h264HRD(r *bitReader) {
	n := r.ue()
	if n > 31 {
		r.err = true
		return
	}
	r.u(8)
	for i := uint32(0); i <= n && !r.err; i++ {
		r.ue()
		r.ue()
		r.u(1)
	}
	r.u(20)
}

// parseH265SPS reads an H.265 SPS NAL unit (ITU-T H.265, 7.3.2.2) up to
// the sub-layer ordering information.
func parseH265SPS(nal []byte) (spsInfo, error) {
	info := spsInfo{reorder: -1, chromaFormat: 1}
	if len(nal) < 15 {
		return info, errSPS
	}
	rbsp := unescapeRBSP(nil, nal[2:])
	if len(rbsp) < 13 {
		return info, errSPS
	}
	r := &bitReader{b: rbsp}
	r.u(4) // sps_video_parameter_set_id
	maxSub := int(r.u(3))
	info.subLayers = maxSub + 1
	info.temporalIDNest = r.flag()
	copy(info.ptl[:], rbsp[1:13])
	r.pos += 96
	var profilePresent, levelPresent [8]bool
	for i := 0; i < maxSub; i++ {
		profilePresent[i], levelPresent[i] = r.flag(), r.flag()
	}
	if maxSub > 0 {
		r.u(2 * (8 - maxSub))
	}
	for i := 0; i < maxSub; i++ {
		if profilePresent[i] {
			r.pos += 88
		}
		if levelPresent[i] {
			r.pos += 8
		}
	}
	r.ue() // sps_seq_parameter_set_id
	info.chromaFormat = int(r.ue())
	if info.chromaFormat > 3 {
		return info, errSPS
	}
	if info.chromaFormat == 3 {
		r.u(1) // separate_colour_plane_flag
	}
	w, h := r.ue(), r.ue()
	var cl, cr, ct, cb uint32
	if r.flag() { // conformance_window_flag
		cl, cr, ct, cb = r.ue(), r.ue(), r.ue(), r.ue()
	}
	info.bitDepthLuma, info.bitDepthChroma = int(r.ue()), int(r.ue())
	r.ue() // log2_max_pic_order_cnt_lsb_minus4
	if r.err || w > 1<<16 || h > 1<<16 {
		return info, errSPS
	}
	subW, subH := uint32(1), uint32(1)
	if info.chromaFormat == 1 || info.chromaFormat == 2 {
		subW = 2
	}
	if info.chromaFormat == 1 {
		subH = 2
	}
	info.width = int(w) - int(subW*(cl+cr))
	info.height = int(h) - int(subH*(ct+cb))
	if info.width <= 0 || info.height <= 0 {
		return info, errSPS
	}
	from := maxSub
	if r.flag() { // sps_sub_layer_ordering_info_present_flag
		from = 0
	}
	reorder := uint32(0)
	for i := from; i <= maxSub && !r.err; i++ {
		r.ue()
		reorder = r.ue()
		r.ue()
	}
	if !r.err && reorder <= 16 {
		info.reorder = int(reorder)
	}
	return info, nil
}
