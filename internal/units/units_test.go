package units

import (
	"errors"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	f := func(in string, want int64) {
		t.Helper()
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	f("0", 0)
	f("123", 123)
	f("256MiB", 256<<20)
	f("256mib", 256<<20)
	f("1.5KiB", 1536)
	f("1GB", 1e9)
	f("64K", 64<<10)
	f(" 2 GiB ", 2<<30)
	f("10B", 10)
	for _, bad := range []string{"", "abc", "-1MiB", "MiB", "1.2.3K", "NaN", "1e30TiB", "8388608TiB", "9223372036854775808", "8EiB", "9.3e18"} {
		if _, err := ParseSize(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseSize(%q): err = %v, want ErrSyntax", bad, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for in, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1KiB", 1536: "1.5KiB", 256 << 20: "256MiB"} {
		if got := FormatSize(in); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	f := func(in string, want time.Duration) {
		t.Helper()
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	f("0", 0)
	f("15s", 15*time.Second)
	f("500ms", 500*time.Millisecond)
	f("2d", 48*time.Hour)
	for _, bad := range []string{"", "15", "x", "-d"} {
		if _, err := ParseDuration(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseDuration(%q): err = %v, want ErrSyntax", bad, err)
		}
	}
}
