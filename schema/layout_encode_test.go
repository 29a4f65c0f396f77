package schema

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// TestAppendPackedExample: the example of docs/schemas.md comes back byte
// for byte from its JSON; bad JSON names the member.
func TestAppendPackedExample(t *testing.T) {
	l, err := ParseLayout([]byte("struct p { f64le x; i16be y[2] }\nf32le speed (m/s); u8 gear; pad 2; bool ok\nchar vin[6]; str8 note; bytes16le raw; p pos; u64be t"))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := hex.DecodeString("0000a0410300000157565731000005686f6c61210200abcd" +
		"000000000000f83f" + "fffe" + "8000" + "0123456789abcdef")
	js, err := l.AppendJSON(nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := l.AppendPacked(nil, js)
	if err != nil || !bytes.Equal(back, msg) {
		t.Fatalf("AppendPacked(%s) = %x, %v; want %x", js, back, err, msg)
	}
	for _, c := range []struct{ js, msg string }{
		{`[1]`, "(message): want an object, got an array"},
		{`{"speed":1}`, "gear: missing"},
		{strings.Replace(string(js), `"gear":3`, `"gear":300`, 1), "gear: 300 is not a uint8"},
		{strings.Replace(string(js), `"gear":3`, `"gear":3.5`, 1), "gear: 3.5 is not a uint8"},
		{strings.Replace(string(js), `"gear":3`, `"gear":3,"extra":1`, 1), "extra: not a member"},
		{strings.Replace(string(js), `"y":[-2,-32768]`, `"y":[1]`, 1), "pos.y: want an array of 2"},
		{strings.Replace(string(js), `"raw":"q80="`, `"raw":"%%"`, 1), "raw: not base64"},
		{`{"speed":1} {}`, "more than one JSON value"},
	} {
		if _, err := l.AppendPacked(nil, []byte(c.js)); !errors.Is(err, ErrBadMessage) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("AppendPacked(%s) = %v, want ErrBadMessage saying %q", c.js, err, c.msg)
		}
	}
}
