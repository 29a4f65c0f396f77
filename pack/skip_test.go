package pack

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
)

// readKeys reads b with opts to the end (or the first error) and returns
// the frames' fingerprints.
func readKeys(t *testing.T, b []byte, opts ReaderOptions, meta bool) ([]string, *Reader, error) {
	r, err := NewBytesReader("d.pack", b, opts)
	if err != nil {
		return nil, nil, err
	}
	var keys []string
	var f Frame
	for {
		if meta {
			err = r.ReadMetaInto(&f)
		} else {
			err = r.ReadInto(&f)
		}
		if err == io.EOF {
			return keys, r, nil
		}
		if err != nil {
			return keys, r, err
		}
		keys = append(keys, frameKey(&f))
	}
}

// TestSkipDamagedFlips (issue #31, item 5): with SkipDamaged a Reader reads
// past damage. Random single changed bytes anywhere after the file header
// (random frame bounds, codecs, type sections, metadata): reading never
// stops with an error and yields every frame but at most the one the byte
// falls in, with read-ahead too; Skipped counts the region and its frame.
// Without SkipDamaged the first damaged frame stops the reads, and its
// error stays (the behaviour before).
func TestSkipDamagedFlips(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 5))
	for trial := range 20 {
		b, frames := damageFile(t, rng)
		var all []string
		for _, fr := range frames {
			all = append(all, fr.key)
		}
		for range 25 {
			p := HeaderSize + rng.Int64N(int64(len(b))-HeaderSize)
			d := bytes.Clone(b)
			d[p] ^= byte(1 + rng.IntN(255))
			var in *damageFrame
			for i := range frames {
				if p >= frames[i].off && p < frames[i].end {
					in = &frames[i]
				}
			}
			for _, ahead := range []int{0, 1} {
				got, r, err := readKeys(t, d, ReaderOptions{SkipDamaged: true, ReadAhead: ahead}, false)
				r.Close()
				if err != nil {
					t.Fatalf("trial %d: byte %d changed, SkipDamaged: %v", trial, p, err)
				}
				want := all
				if in != nil && !slices.Contains(got, in.key) {
					want = slices.DeleteFunc(slices.Clone(all), func(k string) bool { return k == in.key })
				}
				if !slices.Equal(got, want) {
					t.Fatalf("trial %d: byte %d changed (in a frame: %v): read %d of %d frames", trial, p, in != nil, len(got), len(all))
				}
				sk := r.Skipped()
				if lost := len(all) - len(got); sk.Frames != lost && !(lost == 0 && sk.Frames <= 1) {
					t.Errorf("trial %d: byte %d: %d frames lost, Skipped says %+v", trial, p, lost, sk)
				}
				if len(got) < len(all) && sk.Regions == 0 {
					t.Errorf("trial %d: a frame lost and nothing counted skipped", trial)
				}
			}
			if in != nil {
				got, r, err := readKeys(t, d, ReaderOptions{}, false)
				defer r.Close()
				if !slices.Contains(got, in.key) {
					var ce *CorruptError
					if !errors.As(err, &ce) {
						t.Fatalf("trial %d: without SkipDamaged: %v", trial, err)
					}
					var f Frame
					if err2 := r.ReadInto(&f); err2 == nil || err2.Error() != err.Error() {
						t.Fatalf("without SkipDamaged the error does not stay: %v then %v", err, err2)
					}
				}
			}
		}
	}
}

// TestSkipDamagedTypeSection: one changed byte in a type section (the
// demo dump's first 601 bytes) hid every message from the readers; with
// SkipDamaged the frames read and the other types stay; a type section
// whose CRC holds but whose content does not decode is left out by Types
// (counted), where without SkipDamaged Types fails.
func TestSkipDamagedTypeSection(t *testing.T) {
	b, frames := damageFile(t, rand.New(rand.NewPCG(31, 6)))
	r0, _ := NewBytesReader("d.pack", b, ReaderOptions{})
	types, err := r0.Types()
	if err != nil || len(types) < 4 {
		t.Fatalf("types %d, %v", len(types), err)
	}
	first := types[0].Offset
	// CRC damage: the section's payload byte changed.
	d := bytes.Clone(b)
	d[first+SectionHeaderSize+2] ^= 0x40
	if got, _, err := readKeys(t, d, ReaderOptions{}, true); err == nil || len(got) != 0 {
		t.Fatalf("without SkipDamaged: %d frames, %v (want none and the damage)", len(got), err)
	}
	got, r, err := readKeys(t, d, ReaderOptions{SkipDamaged: true}, true)
	if err != nil || len(got) != len(frames) {
		t.Fatalf("SkipDamaged: %d of %d frames, %v", len(got), len(frames), err)
	}
	// The sections that refer to the lost body go too (counted); the
	// others stay.
	refs := 0
	for _, tt := range types[1:] {
		if tt.ID == types[0].ID {
			refs++
		}
	}
	ts, err := r.Types()
	if err != nil || len(ts) != len(types)-1-refs {
		t.Fatalf("SkipDamaged: %d types (of %d, %d referring to the lost one), %v", len(ts), len(types), refs, err)
	}
	if sk := r.Skipped(); sk.Regions != 1 || sk.Frames != 0 || sk.Lost[0].Offset != first || sk.Types != refs {
		t.Errorf("skipped %+v", sk)
	}
	// Content damage under a valid CRC: a body that does not hash to its ID.
	d = bytes.Clone(b)
	n := le.Uint32(d[first+12:])
	d[first+SectionHeaderSize+int64(n)-1] ^= 0x01
	le.PutUint32(d[first+4:], crc(d[first+8:first+SectionHeaderSize+int64(n)]))
	r1, _ := NewBytesReader("d.pack", d, ReaderOptions{})
	if _, err := r1.Types(); err == nil {
		t.Fatal("without SkipDamaged, Types of a bad type section passes")
	}
	r2, _ := NewBytesReader("d.pack", d, ReaderOptions{SkipDamaged: true})
	if ts, err := r2.Types(); err != nil || len(ts) != len(types)-1-refs || r2.Skipped().Types != 1+refs {
		t.Fatalf("SkipDamaged: %d types, %v, skipped %+v", len(ts), err, r2.Skipped())
	}
	// A damaged file header: the records are read.
	d = bytes.Clone(b)
	d[30] ^= 1
	if _, err := NewBytesReader("d.pack", d, ReaderOptions{}); !errors.Is(err, ErrChecksum) {
		t.Fatalf("a damaged header without SkipDamaged: %v", err)
	}
	got, r, err = readKeys(t, d, ReaderOptions{SkipDamaged: true}, false)
	if err != nil || len(got) != len(frames) || r.Skipped().Regions != 1 {
		t.Fatalf("a damaged header with SkipDamaged: %d frames, %v, %+v", len(got), err, r.Skipped())
	}
}

// TestStreamSkipDamaged: a StreamReader reading with SkipDamaged skips a
// frame whose data is damaged (its head checks out, so the stream goes on
// after it) and counts it; damage in a frame's head still stops it.
func TestStreamSkipDamaged(t *testing.T) {
	b, frames := damageFile(t, rand.New(rand.NewPCG(31, 7)))
	if len(frames) < 4 {
		t.Fatalf("%d frames", len(frames))
	}
	fr := frames[len(frames)/2]
	d := bytes.Clone(b)
	d[fr.end-1] ^= 0x20 // the last data byte
	read := func(d []byte, skip bool) (int, *StreamReader, error) {
		s, err := NewStreamReaderWith(bytes.NewReader(d), ReaderOptions{SkipDamaged: skip})
		if err != nil {
			t.Fatal(err)
		}
		var f Frame
		n := 0
		for {
			if err := s.ReadInto(&f); err == io.EOF {
				return n, s, nil
			} else if err != nil {
				return n, s, err
			}
			n++
		}
	}
	if n, _, err := read(d, false); err == nil || n == len(frames)-1 {
		t.Fatalf("without SkipDamaged: %d frames, %v", n, err)
	}
	n, s, err := read(d, true)
	if err != nil || n != len(frames)-1 || s.Skipped().Frames != 1 || s.Skipped().Lost[0].Offset != fr.off {
		t.Fatalf("SkipDamaged: %d of %d frames, %v, %+v", n, len(frames), err, s.Skipped())
	}
	d = bytes.Clone(b)
	d[fr.off+FrameHeaderSize+1] ^= 0x20 // its meta: the head CRC fails
	if n, _, err := read(d, true); err == nil || n != len(frames)/2 {
		t.Fatalf("head damage with SkipDamaged: %d frames, %v (want the stream to stop there)", n, err)
	}
}
