package engine

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
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

// TestManyTopicsRSS: 1,000 and 10,000 topics, each ingesting until its
// ring wraps, keep the process's RSS within the cache size plus a fixed
// overhead (32 MiB).
func TestManyTopicsRSS(t *testing.T) {
	if raceEnabled {
		t.Skip("RSS bound not meaningful under -race (shadow memory)")
	}
	const cache = 64 << 20
	f := func(topics int, ringBytes int64) {
		t.Helper()
		runtime.GC()
		before := rssBytes(t)
		r, _ := newTestRecorder(t, Config{CacheSize: cache, TopicBytes: ringBytes, MaxTopics: topics})
		p := make([]byte, 200)
		ids := make([]ingest.TopicID, topics)
		for i := range ids {
			id, err := r.Discover(ingest.TopicInfo{Name: fmt.Sprintf("topic/%05d", i), Type: ingest.Raw("bytes"), Source: "api"})
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = id
		}
		rounds := int(ringBytes/200) * 2 // every ring wraps
		for round := range rounds {
			for _, id := range ids {
				r.IngestAt(id, int64(round), 0, p)
			}
		}
		st := r.Status()
		runtime.GC()
		grew := rssBytes(t) - before
		t.Logf("%d topics: RSS grew %d MiB (cache %d MiB, arena used %d MiB)", topics, grew>>20, cache>>20, st.Arena.Used>>20)
		if grew > cache+32<<20 {
			t.Fatalf("%d topics: RSS grew %d MiB, want <= cache %d MiB + 32 MiB", topics, grew>>20, cache>>20)
		}
		if len(st.Topics) != topics || st.Topics[topics-1].Counters.Written != uint64(rounds) {
			t.Fatalf("status: %d topics", len(st.Topics))
		}
		r.Close()
	}
	f(1000, 64<<10)
	f(10000, 4<<10)
}
