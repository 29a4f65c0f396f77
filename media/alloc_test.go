//go:build !race

package media

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// nextLoop reads the next sample, rewinding at the end.
func nextLoop(t *testing.T, m *MP4, s *Sample) {
	err := m.Next(s)
	if err == io.EOF {
		m.Rewind()
		err = m.Next(s)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestMP4NextAllocs: after warm-up, Next allocates nothing per sample, in
// a plain file (4-byte NAL lengths, converted in place), a hand-made one
// (2-byte lengths, converted through the scratch buffer) and a fragmented
// one (a moof read and parsed into reused buffers).
func TestMP4NextAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	frag, _ := fmp4(t, rng)
	var nals [][][]byte
	for i := 0; i < 8; i++ {
		nals = append(nals, [][]byte{slice(rng, CodecH264, 1+4*(i%2), 100)})
	}
	files := map[string][]byte{
		"plain":      writeMP4(t, CodecH264, MP4WriterOptions{}, synthStream(rng, CodecH264, 60, 15, 2, true)),
		"nal-len-2":  synthMP4(t, nals, []uint32{1, 1, 1, 1, 1, 1, 1, 1}, make([]int32, 8), []bool{true, false, true, false, true, false, true, false}, []int{4, 4}),
		"fragmented": frag,
	}
	for name, b := range files {
		m, err := NewMP4Reader(bytes.NewReader(b), int64(len(b)), name, MP4Options{})
		if err != nil {
			t.Fatal(err)
		}
		var s Sample
		for range 200 {
			nextLoop(t, m, &s)
		}
		if n := testing.AllocsPerRun(500, func() { nextLoop(t, m, &s) }); n != 0 {
			t.Errorf("%s: %v allocs per sample, want 0", name, n)
		}
	}
}

// TestMessageAllocs: the message encoders, the decoders (strings reused)
// and KeyFrame allocate nothing once the buffer is large enough.
func TestMessageAllocs(t *testing.T) {
	data := annexB(testSPS264, testPPS264, slice(rand.New(rand.NewPCG(7, 7)), CodecH264, 5, 1000))
	buf := make([]byte, 0, 4096)
	var v CompressedVideo
	var im CompressedImage
	msg := AppendCompressedVideo(nil, testStart, "camera/front", "h264", data)
	img := AppendCompressedImage(nil, testStart, "camera/front", "jpeg", data)
	DecodeCompressedVideo(msg, &v)
	DecodeCompressedImage(img, &im)
	for name, f := range map[string]func(){
		"AppendCompressedVideo": func() { buf = AppendCompressedVideo(buf[:0], testStart, "camera/front", "h264", data) },
		"AppendCompressedImage": func() { buf = AppendCompressedImage(buf[:0], testStart, "camera/front", "jpeg", data) },
		"DecodeCompressedVideo": func() {
			if DecodeCompressedVideo(msg, &v) != nil {
				t.Fatal("decode")
			}
		},
		"DecodeCompressedImage": func() {
			if DecodeCompressedImage(img, &im) != nil {
				t.Fatal("decode")
			}
		},
		"KeyFrame": func() {
			if !KeyFrame(CodecH264, data) {
				t.Fatal("not a key frame")
			}
		},
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocs, want 0", name, n)
		}
	}
}
