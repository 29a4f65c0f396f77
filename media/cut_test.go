package media

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// readCut reads every sample of b with AcceptCut (Data copied) and its Cut.
func readCut(t *testing.T, b []byte, opts MP4Options) ([]Sample, *Cut, error) {
	t.Helper()
	opts.AcceptCut = true
	m, err := NewMP4Reader(bytes.NewReader(b), int64(len(b)), "cut.mp4", opts)
	if err != nil {
		return nil, nil, err
	}
	var out []Sample
	var s Sample
	for {
		err := m.Next(&s)
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, nil, err
		}
		c := s
		c.Data = bytes.Clone(s.Data)
		out = append(out, c)
	}
	return out, m.Cut(), nil
}

// TestMP4CutFFprobe: ffmpeg's files (moov first, fragmented H.264 and
// H.265) cut at many points read, with AcceptCut, every sample wholly
// before the cut and nothing after it: the same samples as the whole
// file's first ones, as many as ffprobe lists for the cut file less the
// one it reads partly (it keeps a packet the cut runs through); the Cut
// names the offset, the box and what was lost. Without AcceptCut the cut
// file is an error, as before.
func TestMP4CutFFprobe(t *testing.T) {
	for _, name := range []string{"h264_faststart.mp4", "h264_frag.mp4", "h265_frag.mp4"} {
		t.Run(name, func(t *testing.T) {
			path := fixture(t, name)
			whole, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			track, all := demuxAll(t, path, MP4Options{})
			pall := ffprobe(t, path)
			if len(pall.Packets) != len(all) {
				t.Fatalf("%d samples, ffprobe %d packets", len(all), len(pall.Packets))
			}
			end := make([]int, len(all)) // where each sample's data ends
			for i, pk := range pall.Packets {
				pos, _ := strconv.Atoi(pk.Pos)
				size, _ := strconv.Atoi(pk.Size)
				end[i] = pos + size
			}
			frag := track.Fragmented
			// cut points: through sample data, and into the headers of
			// top-level boxes after the moov (a moof, an mdat)
			var cuts []int
			for k := 1; k < 10; k += 2 {
				cuts = append(cuts, len(whole)*k/10)
			}
			for _, typ := range []string{"moof", "mdat"} {
				for i, off := range findBoxes(whole, typ) {
					if i < 3 {
						cuts = append(cuts, off+3, off+8, off+20)
					}
				}
			}
			dir := t.TempDir()
			for _, n := range cuts {
				b := whole[:n]
				if _, err := NewMP4Reader(bytes.NewReader(b), int64(n), "cut.mp4", MP4Options{}); err == nil && !frag {
					t.Errorf("cut at %d: read without AcceptCut", n)
				}
				got, cut, err := readCut(t, b, MP4Options{})
				if err != nil {
					if !frag && n > findBoxes(whole, "mdat")[0] {
						t.Fatalf("cut at %d: %v", n, err)
					}
					var be *BoxError
					if !errors.As(err, &be) {
						t.Fatalf("cut at %d: %T %v", n, err, err)
					}
					continue // cut inside the moov
				}
				want := 0
				for want < len(all) && end[want] <= n {
					want++
				}
				if len(got) != want {
					t.Fatalf("cut at %d: %d samples, want %d (those ending before the cut)", n, len(got), want)
				}
				for i := range got {
					a, g := all[i], got[i]
					if a.PTSNs != g.PTSNs || a.DTSNs != g.DTSNs || a.Key != g.Key || !bytes.Equal(a.Data, g.Data) {
						t.Fatalf("cut at %d: sample %d differs from the whole file's", n, i)
					}
				}
				if cut == nil || cut.Read != int64(want) || cut.Size != int64(n) {
					t.Fatalf("cut at %d: Cut %+v", n, cut)
				}
				if want < len(all) {
					if cut.Lost <= 0 && !cut.AtLeast {
						t.Errorf("cut at %d: %s", n, cut)
					}
					if !frag && (cut.Lost != int64(len(all)-want) || cut.AtLeast) {
						t.Errorf("cut at %d: %s; %d samples lost", n, cut, len(all)-want)
					}
					if frag && cut.Lost > int64(len(all)-want) {
						t.Errorf("cut at %d: %s; only %d samples lost", n, cut, len(all)-want)
					}
				}
				p := filepath.Join(dir, "cut.mp4")
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
				if exec.Command("ffprobe", "-v", "quiet", p).Run() != nil {
					// ffprobe refuses a file cut inside a moof ("error
					// reading header"), and one with nothing to read
					if len(got) > 0 && cut.Box != "moof" && cut.Box != "(top level)" {
						t.Fatalf("cut at %d: ffprobe refuses the file; %d samples, %s", n, len(got), cut)
					}
					continue
				}
				pc := ffprobe(t, p)
				extra := len(pc.Packets) - len(got)
				if extra != 0 && extra != 1 {
					t.Fatalf("cut at %d: %d samples, ffprobe lists %d packets", n, len(got), len(pc.Packets))
				}
				if extra == 1 { // the packet the cut runs through, read partly
					last := pc.Packets[len(pc.Packets)-1]
					pos, _ := strconv.Atoi(last.Pos)
					size, _ := strconv.Atoi(last.Size)
					if pos+size != n || end[want] <= n {
						t.Fatalf("cut at %d: ffprobe's last packet at %d + %d is not the partial one", n, pos, size)
					}
				}
			}
		})
	}
}

// moovFirst moves the moov box of an MP4Writer file (ftyp, mdat, moov)
// before its mdat, shifting the chunk offsets: a "faststart" file.
func moovFirst(t *testing.T, b []byte) []byte {
	t.Helper()
	moov, mdat := findBoxes(b, "moov")[0], findBoxes(b, "mdat")[0]
	size := len(b) - moov
	if moov+int(binary.BigEndian.Uint32(b[moov:])) != len(b) {
		t.Fatal("moov is not last")
	}
	out := append(append(append([]byte{}, b[:mdat]...), b[moov:]...), b[mdat:moov]...)
	for _, off := range findBoxes(out, "moov/trak/mdia/minf/stbl/stco") {
		n := int(binary.BigEndian.Uint32(out[off+12:]))
		for i := range n {
			p := off + 16 + 4*i
			binary.BigEndian.PutUint32(out[p:], binary.BigEndian.Uint32(out[p:])+uint32(size))
		}
	}
	return out
}

// TestMP4CutSynthetic: every prefix of a plain file (moov first) and of a
// fragmented one is refused when the cut falls in the moov, else reads,
// with AcceptCut, a prefix of the samples (the plain file: every sample
// wholly in it, and Cut accounts for the others), never fewer for a
// longer prefix.
func TestMP4CutSynthetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	plain := moovFirst(t, writeMP4(t, CodecH264, MP4WriterOptions{}, synthStream(rng, CodecH264, 40, 8, 2, true)))
	frag, _ := fmp4(t, rng)
	for _, c := range []struct {
		name string
		b    []byte
		frag bool
	}{{"plain", plain, false}, {"fragmented", frag, true}} {
		all, cut, err := readCut(t, c.b, MP4Options{})
		if err != nil || cut != nil || len(all) == 0 {
			t.Fatalf("%s: whole file: %d samples, cut %v, %v", c.name, len(all), cut, err)
		}
		moov := findBoxes(c.b, "moov")[0]
		moovEnd := moov + int(binary.BigEndian.Uint32(c.b[moov:]))
		prev := 0
		boundary := map[int]bool{}
		for off := 0; off+8 <= len(c.b); off += int(binary.BigEndian.Uint32(c.b[off:])) {
			boundary[off] = true
		}
		for n := 0; n < len(c.b); n++ {
			got, cut, err := readCut(t, c.b[:n], MP4Options{})
			if n < moovEnd {
				if err == nil {
					t.Fatalf("%s: cut at %d inside the moov: read", c.name, n)
				}
				continue
			}
			if c.frag && boundary[n] && err == nil && cut == nil {
				// a fragmented file cut between boxes looks whole
				if len(got) < prev {
					t.Fatalf("%s: cut at %d: %d samples, %d before", c.name, n, len(got), prev)
				}
				prev = len(got)
				continue
			}
			if err != nil || cut == nil || cut.Read != int64(len(got)) || len(got) < prev {
				t.Fatalf("%s: cut at %d: %d samples (%d before), %v %v", c.name, n, len(got), prev, cut, err)
			}
			prev = len(got)
			if !c.frag && int64(len(got))+cut.Lost != int64(len(all)) {
				t.Fatalf("%s: cut at %d: %d samples, %s", c.name, n, len(got), cut)
			}
			for i := range got {
				if !bytes.Equal(got[i].Data, all[i].Data) || got[i].PTSNs != all[i].PTSNs {
					t.Fatalf("%s: cut at %d: sample %d differs", c.name, n, i)
				}
			}
		}
	}
}
