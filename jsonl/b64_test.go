package jsonl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestDecodeInPlace: decoding in place agrees with
// base64.StdEncoding.DecodeString, valid or not, on texts around the
// block size, with padding, bad characters and padding in the middle.
func TestDecodeInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var texts []string
	for _, n := range []int{0, 1, 2, 3, 4, 5, 3071, 3072, 3073, 6144, 6145, 10000} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		s := base64.StdEncoding.EncodeToString(b)
		texts = append(texts, s)
		if len(s) > 8 {
			texts = append(texts, s[:len(s)-1], s[:len(s)/2]+"!"+s[len(s)/2+1:], s[:4]+"=="+s[6:], s[:len(s)-2]+"==")
		}
		if len(s) > 4100 {
			texts = append(texts, s[:4094]+"=="+s[4096:]) // padding ending the first block
		}
	}
	texts = append(texts, "====", "A===", "AA==", "AAA=", "AAAA", "\r\nAAAA")
	for _, s := range texts {
		want, werr := base64.StdEncoding.DecodeString(s)
		got, gerr := decodeInPlace([]byte(s))
		if (werr == nil) != (gerr == nil) || werr == nil && !bytes.Equal(got, want) {
			t.Errorf("len %d %.12q: got %d bytes, %v; want %d, %v", len(s), s, len(got), gerr, len(want), werr)
		}
	}
}

// TestDataField: "data" decodes in place, through encoding/json when the
// string has escapes, and is absent when null or missing; a non-string is
// an error.
func TestDataField(t *testing.T) {
	for _, c := range []struct {
		line    string
		want    []byte // nil: no data
		present bool
		bad     bool
	}{
		{`{"data":"AAEC"}`, []byte{0, 1, 2}, true, false},
		{`{"data":""}`, []byte{}, true, false},
		{`{"data":"AA\/C"}`, []byte{0, 15, 194}, true, false},
		{`{"data":"\u0041AEC"}`, []byte{0, 1, 2}, true, false},
		{`{"data":null}`, nil, false, false},
		{`{}`, nil, false, false},
		{`{"data":12}`, nil, true, true},
		{`{"data":"A!EC"}`, nil, true, true},
	} {
		var m message
		if err := json.Unmarshal([]byte(c.line), &m); err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		if (m.Data != nil) != c.present {
			t.Errorf("%s: present %v", c.line, m.Data != nil)
			continue
		}
		if m.Data == nil {
			continue
		}
		got, err := m.Data.decode()
		if (err != nil) != c.bad || !c.bad && (got == nil || !bytes.Equal(got, c.want)) {
			t.Errorf("%s: %v, %v", c.line, got, err)
		}
	}
}
