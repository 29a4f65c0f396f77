package suggest

import (
	"reflect"
	"strings"
	"testing"
)

func TestSimilar(t *testing.T) {
	keys := []string{"cache_size", "topic_bytes", "pre", "post", "guard", "dump_dir", "max_packet", "format", "reorder", "reorder_window"}
	f := func(name string, want ...string) {
		t.Helper()
		if got := Similar(name, keys); !reflect.DeepEqual(got, want) {
			t.Errorf("Similar(%q) = %q, want %q", name, got, want)
		}
	}
	f("cache_sise", "cache_size")
	f("cahce_size", "cache_size") // a swap is one edit
	f("cache-size", "cache_size") // dashes are underscores
	f("CACHE_SIZE", "cache_size")
	f("pots", "post")
	f("prre", "pre")
	f("cache", "cache_size")
	f("window", "reorder_window")
	f("fromat", "format")
	f("colour")
	f("cache_size") // known: nothing to suggest
	f("")
	f(strings.Repeat("a", MaxLen+1))
	if got := Similar("--form", []string{"from", "format", "to"}); !reflect.DeepEqual(got, []string{"from", "format"}) {
		t.Errorf("flags: %q", got)
	}
}

func TestDidYouMean(t *testing.T) {
	if got := DidYouMean("pots", []string{"post", "pre"}); got != ` (did you mean "post"?)` {
		t.Errorf("one: %q", got)
	}
	if got := DidYouMean("lst", []string{"list", "ls", "info"}); got != ` (did you mean "list" or "ls"?)` {
		t.Errorf("two: %q", got)
	}
	if got := DidYouMean("zzz", []string{"info"}); got != "" {
		t.Errorf("none: %q", got)
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"kitten", "sitting", 3}, {"ca", "abc", 3}} {
		if got := distance(c.a, c.b); got != c.d {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
