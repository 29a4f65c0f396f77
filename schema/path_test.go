package schema

import (
	"errors"
	"testing"
)

func TestPathLookupJSON(t *testing.T) {
	doc := []byte(`{"speed": 20.5, "imu": {"accel": [0.1, -9, 3]}, "labels": {"front left": "x"}, "n": null, "s": "a\"b"}`)
	f := func(path, want string, ok bool) {
		t.Helper()
		p, err := ParsePath(path)
		if err != nil {
			t.Fatalf("ParsePath(%q): %v", path, err)
		}
		if p.String() != path {
			t.Errorf("String() = %q, want %q", p.String(), path)
		}
		got, gok := p.LookupJSON(doc)
		if gok != ok || string(got) != want {
			t.Errorf("LookupJSON(%q) = %q, %v; want %q, %v", path, got, gok, want, ok)
		}
	}
	f("speed", "20.5", true)
	f("imu.accel[1]", "-9", true)
	f("imu.accel[3]", "", false)
	f("imu", `{"accel": [0.1, -9, 3]}`, true)
	f(`labels["front left"]`, `"x"`, true)
	f("n", "null", true)
	f("s", `"a\"b"`, true)
	f("missing", "", false)
	f("speed.x", "", false)
	f("speed[0]", "", false)

	p, _ := ParsePath("speed")
	if _, ok := p.LookupJSON([]byte(`{"speed": `)); ok {
		t.Error("LookupJSON of invalid JSON found a value")
	}
	for _, bad := range []string{"", "a..b", "a[", "a[x]", "1a"} {
		if _, err := ParsePath(bad); !errors.Is(err, ErrNoField) {
			t.Errorf("ParsePath(%q) = %v, want ErrNoField", bad, err)
		}
	}
}
