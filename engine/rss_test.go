package engine

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// rssBytes reads the process's resident set size.
func rssBytes(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("needs /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// TestThousandTopicsRSS: 1,000 topics, each ingesting, keep the process's
// RSS within the cache size plus a fixed overhead (32 MiB).
func TestThousandTopicsRSS(t *testing.T) {
	const cache = 64 << 20
	runtime.GC()
	before := rssBytes(t)
	r, _ := newTestRecorder(t, Config{CacheSize: cache, TopicBytes: 64 << 10, MaxTopics: 1000})
	p := make([]byte, 200)
	ids := make([]TopicID, 1000)
	for i := range ids {
		id, err := r.Discover(TopicInfo{Name: fmt.Sprintf("topic/%04d", i), Type: "bytes", Source: "api"})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	for round := range 400 { // every ring wraps at least once
		for _, id := range ids {
			r.IngestAt(id, int64(round), 0, p)
		}
	}
	st := r.Status()
	runtime.GC()
	grew := rssBytes(t) - before
	t.Logf("1000 topics: RSS grew %d MiB (cache %d MiB, arena used %d MiB)", grew>>20, cache>>20, st.Arena.Used>>20)
	if grew > cache+32<<20 {
		t.Fatalf("RSS grew %d MiB, want <= cache %d MiB + 32 MiB", grew>>20, cache>>20)
	}
	if len(st.Topics) != 1000 || st.Topics[999].Counters.Written != 400 {
		t.Fatalf("status: %d topics", len(st.Topics))
	}
}
