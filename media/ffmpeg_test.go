package media

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// ffmpegFixture is a video made by ffmpeg for the tests.
type ffmpegFixture struct {
	name    string
	encoder string // needed encoder
	args    []string
}

var testsrc = []string{"-f", "lavfi", "-i", "testsrc=size=320x240:rate=30", "-t", "2"}

func args(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var (
	x264BFrames = []string{"-pix_fmt", "yuv420p", "-c:v", "libx264", "-bf", "2", "-g", "15"}
	x265BFrames = []string{"-pix_fmt", "yuv420p", "-c:v", "libx265", "-x265-params", "bframes=2:keyint=15:log-level=error"}
	fragmented  = []string{"-movflags", "frag_keyframe+empty_moov"}

	ffmpegFixtures = []ffmpegFixture{
		{"h264_bframes.mp4", "libx264", args(testsrc, x264BFrames)},
		// High 4:4:4 Predictive: the SPS carries chroma_format_idc 3.
		{"h264_444.mp4", "libx264", args(testsrc, []string{"-c:v", "libx264", "-bf", "3", "-g", "30"})},
		{"h265_bframes.mp4", "libx265", args(testsrc, x265BFrames)},
		{"h264_frag.mp4", "libx264", args(testsrc, x264BFrames, fragmented)},
		// moov before mdat, as cameras and web videos have it.
		{"h264_faststart.mp4", "libx264", args(testsrc, x264BFrames, []string{"-movflags", "+faststart"})},
		{"h265_frag.mp4", "libx265", args(testsrc, x265BFrames, fragmented, []string{"-tag:v", "hvc1"})},
		// An audio track first: the video is track 2.
		{"h264_audio_first.mp4", "libx264", args([]string{"-f", "lavfi", "-i", "sine=frequency=440:duration=2"},
			testsrc, []string{"-map", "0:a", "-map", "1:v", "-c:a", "aac"}, x264BFrames)},
	}
	fixtureMu    sync.Mutex
	fixtureErr   = map[string]string{}
	encodersOnce sync.Once
	encoders     string
)

// needFFmpeg skips the test when ffmpeg or ffprobe is not installed.
func needFFmpeg(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (Debian: apt-get install ffmpeg): %v", tool, err)
		}
	}
}

// fixture returns the path of an ffmpeg fixture, making it on first use;
// it skips the test when ffmpeg, or the encoder it needs, is missing.
func fixture(t testing.TB, name string) string {
	t.Helper()
	needFFmpeg(t)
	encodersOnce.Do(func() {
		out, _ := exec.Command("ffmpeg", "-hide_banner", "-encoders").Output()
		encoders = string(out)
	})
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	for _, f := range ffmpegFixtures {
		if f.name != name {
			continue
		}
		if !strings.Contains(encoders, " "+f.encoder+" ") {
			t.Skipf("this ffmpeg has no %s encoder", f.encoder)
		}
		p := filepath.Join(fixtureDir, name)
		if msg, ok := fixtureErr[name]; ok {
			if msg != "" {
				t.Fatal(msg)
			}
			return p
		}
		out, err := exec.Command("ffmpeg", append([]string{"-hide_banner", "-loglevel", "error", "-y"}, append(f.args, p)...)...).CombinedOutput()
		if err != nil {
			fixtureErr[name] = "ffmpeg " + strings.Join(f.args, " ") + ": " + err.Error() + "\n" + string(out)
			t.Fatal(fixtureErr[name])
		}
		fixtureErr[name] = ""
		return p
	}
	t.Fatalf("no fixture %s", name)
	return ""
}

// probe is what ffprobe says about a file's first video stream.
type probe struct {
	Streams []struct {
		CodecName  string `json:"codec_name"`
		Width      int    `json:"width"`
		Height     int    `json:"height"`
		TimeBase   string `json:"time_base"`
		HasBFrames int    `json:"has_b_frames"`
		Profile    string `json:"profile"`
	} `json:"streams"`
	Packets []struct {
		PTS   *int64 `json:"pts"`
		DTS   *int64 `json:"dts"`
		Size  string `json:"size"`
		Pos   string `json:"pos"`
		Flags string `json:"flags"`
	} `json:"packets"`
}

func ffprobe(t testing.TB, path string) probe {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_streams", "-show_packets",
		"-of", "json", path).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("ffprobe %s: %v\n%s", path, err, ee.Stderr)
		}
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p probe
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Streams) != 1 {
		t.Fatalf("ffprobe %s: %d video streams", path, len(p.Streams))
	}
	return p
}

// ns converts a time in the stream's time base to ns, rounded to nearest.
func (p probe) ns(t testing.TB, v *int64) int64 {
	t.Helper()
	if v == nil {
		t.Fatal("ffprobe gave no time")
	}
	num, den, ok := strings.Cut(p.Streams[0].TimeBase, "/")
	if !ok {
		t.Fatalf("time base %q", p.Streams[0].TimeBase)
	}
	r := new(big.Rat).SetFrac(big.NewInt(*v*1e9), big.NewInt(1))
	n, _ := new(big.Int).SetString(num, 10)
	d, _ := new(big.Int).SetString(den, 10)
	r.Mul(r, new(big.Rat).SetFrac(n, d))
	f, _ := r.Float64()
	if f < 0 {
		return -int64(-f + 0.5)
	}
	return int64(f + 0.5)
}

// demuxAll reads every sample of the selected track (Data copied).
func demuxAll(t testing.TB, path string, opts MP4Options) (Track, []Sample) {
	t.Helper()
	m, err := OpenMP4(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var out []Sample
	var s Sample
	for {
		err := m.Next(&s)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		c := s
		c.Data = bytes.Clone(s.Data)
		out = append(out, c)
	}
	return m.Track(), out
}

// payloadSize is the size a sample has in an MP4 with 4-byte NAL lengths
// and the parameter sets in the sample entry: its other NAL units.
func payloadSize(c Codec, annexB []byte) int {
	n := 0
	for rest := annexB; ; {
		nal, r, ok := nextNAL(rest)
		if !ok {
			return n
		}
		rest = r
		if !isParameterSet(c, nalType(c, nal)) {
			n += 4 + len(nal)
		}
	}
}

// checkAgainstProbe: the samples are the packets ffprobe lists, in order:
// same presentation and decode times (ffprobe's, which apply the edit
// list, plus start), same sizes, same key flags; none discarded.
func checkAgainstProbe(t *testing.T, what string, p probe, c Codec, start int64, samples []Sample) {
	t.Helper()
	if len(p.Packets) != len(samples) {
		t.Fatalf("%s: ffprobe lists %d packets, %d samples", what, len(p.Packets), len(samples))
	}
	for i, pk := range p.Packets {
		s := samples[i]
		size, _ := strconv.Atoi(pk.Size)
		pts, dts := p.ns(t, pk.PTS)+start, p.ns(t, pk.DTS)+start
		if s.PTSNs != pts || s.DTSNs != dts || s.Key != strings.HasPrefix(pk.Flags, "K") ||
			payloadSize(c, s.Data) != size || strings.Contains(pk.Flags, "D") {
			t.Fatalf("%s: sample %d: pts %d dts %d key %v size %d; ffprobe: pts %d dts %d flags %s size %d",
				what, i, s.PTSNs, s.DTSNs, s.Key, payloadSize(c, s.Data), pts, dts, pk.Flags, size)
		}
	}
}

const testStart = int64(1_796_218_342_052_000_000) // 2026-12-02T13:32:22.052Z

// TestMP4RemuxFFprobe: MP4 files made by ffmpeg (H.264 and H.265 with
// B-frames, plain and fragmented, with an audio track first) demux to the
// samples ffprobe lists; remuxed (with the input's timescale, with an
// automatic one, and through foxglove.CompressedVideo messages with the
// decode times derived and key frames found from the NAL types) they give
// a file where ffprobe lists the same packets (presentation and decode
// times, sizes, key flags, order) and which demuxes to the same samples,
// byte for byte.
func TestMP4RemuxFFprobe(t *testing.T) {
	for _, f := range ffmpegFixtures {
		t.Run(f.name, func(t *testing.T) {
			in := fixture(t, f.name)
			pin := ffprobe(t, in)
			track, samples := demuxAll(t, in, MP4Options{StartNs: testStart})
			if track.Codec.String() != strings.Replace(pin.Streams[0].CodecName, "hevc", "h265", 1) ||
				track.Width != pin.Streams[0].Width || track.Height != pin.Streams[0].Height {
				t.Fatalf("track %+v; ffprobe %+v", track, pin.Streams[0])
			}
			checkAgainstProbe(t, "demux", pin, track.Codec, testStart, samples)
			reordered := false
			for _, s := range samples {
				reordered = reordered || s.PTSNs != s.DTSNs
			}
			if !reordered {
				t.Fatal("no B-frames: the test would not exercise ctts")
			}
			for _, mode := range []string{"timescale=input", "timescale=auto", "messages"} {
				out := filepath.Join(t.TempDir(), "out.mp4")
				opts := MP4WriterOptions{OriginNs: testStart}
				switch mode {
				case "timescale=input":
					opts.Timescale = track.Timescale
				case "messages":
					opts.DeriveDTS = true
				}
				w, err := CreateMP4(out, track.Codec, opts)
				if err != nil {
					t.Fatal(err)
				}
				var msg []byte
				var v CompressedVideo
				for _, s := range samples {
					if mode == "messages" {
						msg = AppendCompressedVideo(msg[:0], s.PTSNs, "camera", track.Codec.String(), s.Data)
						if err := DecodeCompressedVideo(msg, &v); err != nil {
							t.Fatal(err)
						}
						c, err := ParseCodec(v.Format)
						if err != nil || c != track.Codec {
							t.Fatalf("format %q: %v", v.Format, err)
						}
						s = Sample{PTSNs: v.TimestampNs, Key: KeyFrame(c, v.Data), Data: v.Data}
					}
					if err := w.Write(&s); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				pout := ffprobe(t, out)
				if pout.Streams[0].CodecName != pin.Streams[0].CodecName || pout.Streams[0].Profile != pin.Streams[0].Profile ||
					pout.Streams[0].Width != pin.Streams[0].Width || pout.Streams[0].Height != pin.Streams[0].Height {
					t.Errorf("%s: stream %+v, input %+v", mode, pout.Streams[0], pin.Streams[0])
				}
				checkAgainstProbe(t, mode, pout, track.Codec, testStart, samples)
				_, back := demuxAll(t, out, MP4Options{StartNs: testStart})
				for i := range samples {
					a, b := samples[i], back[i]
					if a.PTSNs != b.PTSNs || a.DTSNs != b.DTSNs || a.Key != b.Key || !bytes.Equal(a.Data, b.Data) {
						t.Fatalf("%s: sample %d read back as pts %d dts %d key %v %d bytes; was %d %d %v %d bytes",
							mode, i, b.PTSNs, b.DTSNs, b.Key, len(b.Data), a.PTSNs, a.DTSNs, a.Key, len(a.Data))
					}
				}
			}
		})
	}
}

// TestMP4TrackSelection: tracks are listed in file order with their
// codecs; the first H.264/H.265 track is chosen unless a track_ID is
// given; asking for a non-video track is ErrNoTrack.
func TestMP4TrackSelection(t *testing.T) {
	p := fixture(t, "h264_audio_first.mp4")
	m, err := OpenMP4(p, MP4Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tr := m.Tracks()
	if len(tr) != 2 || tr[0].Handler != "soun" || tr[0].Codec != CodecNone || tr[0].Format != "mp4a" ||
		tr[1].Codec != CodecH264 || m.Track().ID != tr[1].ID || tr[1].Samples != 60 {
		t.Fatalf("tracks %+v, selected %+v", tr, m.Track())
	}
	if _, err := OpenMP4(p, MP4Options{TrackID: tr[0].ID}); !errors.Is(err, ErrNoTrack) {
		t.Errorf("audio track selected: %v", err)
	}
	if m2, err := OpenMP4(p, MP4Options{TrackID: tr[1].ID}); err != nil || m2.Track().ID != tr[1].ID {
		t.Errorf("track %d: %v", tr[1].ID, err)
	} else {
		m2.Close()
	}
}
