package mcap

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

func TestMessagesInTimeOrder(t *testing.T) {
	// perChannel: each channel's messages written in a block of their own
	// (overlapping chunks); shuffled: random times in random chunks (the
	// chunk cache evicts); sorted: already in order.
	base := testMessages(600)
	perChannel := slices.Clone(base)
	slices.SortStableFunc(perChannel, func(a, b sent) int { return int(a.m.ChannelID) - int(b.m.ChannelID) })
	shuffled := slices.Clone(base)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range shuffled {
		shuffled[i].m.LogTime = uint64(rng.IntN(300)) // many equal times
	}
	for name, in := range map[string][]sent{"perChannel": perChannel, "shuffled": shuffled, "sorted": base} {
		for _, comp := range compressions {
			t.Run(fmt.Sprintf("%s/compression=%q", name, comp), func(t *testing.T) {
				want := slices.Clone(in)
				slices.SortStableFunc(want, func(a, b sent) int {
					switch {
					case a.m.LogTime < b.m.LogTime:
						return -1
					case a.m.LogTime > b.m.LogTime:
						return 1
					}
					return 0
				})
				b := encode(t, Options{Compression: comp, ChunkSize: 2048}, in)
				r, err := NewReader(b, "order.mcap", ReaderOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var got []sent
				err = r.MessagesInTimeOrder(func(c *Channel, m *Message) error {
					cp := *m
					cp.Data = bytes.Clone(m.Data)
					got = append(got, sent{c.Topic, cp})
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				sameMessages(t, got, want)
			})
		}
	}
}

// TestMessagesInTimeOrderOther reads the reference writer's unchunked file
// (messages outside chunks) in time order.
func TestMessagesInTimeOrderOther(t *testing.T) {
	r, err := Open(filepath.Join("testdata", "other", "unchunked.mcap"), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var last uint64
	n := 0
	err = r.MessagesInTimeOrder(func(_ *Channel, m *Message) error {
		if m.LogTime < last {
			t.Errorf("time went back: %d after %d", m.LogTime, last)
		}
		last = m.LogTime
		n++
		return nil
	})
	if err != nil || n != 60 {
		t.Fatalf("%d messages, %v", n, err)
	}
}

func TestMessagesInTimeOrderUnchunked(t *testing.T) {
	b := append([]byte{}, Magic[:]...)
	b = AppendHeader(b, "", "hand")
	b = AppendChannel(b, &Channel{ID: 3, Topic: "t"})
	for _, ts := range []uint64{30, 10, 20, 10} {
		b = AppendMessage(b, &Message{ChannelID: 3, LogTime: ts, Sequence: uint32(ts), Data: []byte{byte(ts)}})
	}
	b = appendDataEnd(b, 0)
	b = append(appendU32(appendFooterPrefix(b, 0, 0), 0), Magic[:]...)
	r, err := NewReader(b, "hand.mcap", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	err = r.MessagesInTimeOrder(func(c *Channel, m *Message) error {
		if c.Topic != "t" || m.Data[0] != byte(m.LogTime) {
			t.Errorf("message %+v on %q", m, c.Topic)
		}
		got = append(got, m.LogTime)
		return nil
	})
	if err != nil || !slices.Equal(got, []uint64{10, 10, 20, 30}) {
		t.Fatalf("got %v, %v", got, err)
	}
}

func stableByTime(in []sent) []sent {
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b sent) int { return cmp.Compare(a.m.LogTime, b.m.LogTime) })
	return out
}

func cursorAll(t *testing.T, c *Cursor) []sent {
	t.Helper()
	var got []sent
	for {
		ok, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if ok, err := c.Next(); ok || err != nil {
				t.Fatalf("Next after the end: %v, %v", ok, err)
			}
			return got
		}
		m := *c.Message()
		m.Data = bytes.Clone(m.Data)
		got = append(got, sent{c.Channel().Topic, m})
	}
}

// TestCursor reads files in order, per channel (overlapping chunks) and
// shuffled, with one message per chunk (more chunks than the cache holds)
// and larger chunks: time order is the stable sort by log time, FileOrder
// is the file's order, SeekTime skips what is before its time, and a
// cursor restarts as often as asked.
func TestCursor(t *testing.T) {
	base := testMessages(700)
	perChannel := slices.Clone(base)
	slices.SortStableFunc(perChannel, func(a, b sent) int { return int(a.m.ChannelID) - int(b.m.ChannelID) })
	shuffled := slices.Clone(base)
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for i := range shuffled {
		shuffled[i].m.LogTime = uint64(rng.IntN(400))
	}
	for name, in := range map[string][]sent{"sorted": base, "perChannel": perChannel, "shuffled": shuffled} {
		for _, comp := range compressions {
			for _, chunk := range []int{1, 8 << 10} {
				t.Run(fmt.Sprintf("%s/compression=%q/chunk=%d", name, comp, chunk), func(t *testing.T) {
					b := encode(t, Options{Compression: comp, ChunkSize: chunk}, in)
					r, err := NewReader(b, "cursor.mcap", ReaderOptions{})
					if err != nil {
						t.Fatal(err)
					}
					defer r.Close()
					c, err := r.Cursor()
					if err != nil {
						t.Fatal(err)
					}
					if c.Info().Messages != uint64(len(in)) || len(c.Info().Channels) != len(testTopics) {
						t.Fatalf("info %+v", c.Info())
					}
					want := stableByTime(in)
					sameMessages(t, cursorAll(t, c), want)
					// A budget below the chunks overlapping at one instant is
					// refused at once; at that peak everything is read.
					c.budget = 3 * chunk
					c.SeekTime(0)
					if c.peak > uint64(c.budget) {
						if ok, err := c.Next(); ok || !errors.Is(err, ErrTooLarge) {
							t.Fatalf("overlap of %d bytes over a budget of %d: %v %v, want ErrTooLarge", c.peak, c.budget, ok, err)
						}
					}
					c.budget = max(int(c.peak), 1)
					c.SeekTime(0)
					sameMessages(t, cursorAll(t, c), want)
					c.FileOrder()
					sameMessages(t, cursorAll(t, c), in)
					for _, from := range []uint64{0, 1, want[len(want)/2].m.LogTime, want[len(want)-1].m.LogTime, want[len(want)-1].m.LogTime + 1} {
						c.SeekTime(from)
						i := 0
						for i < len(want) && want[i].m.LogTime < from {
							i++
						}
						sameMessages(t, cursorAll(t, c), want[i:])
					}
				})
			}
		}
	}
}

// TestCursorMemory: reading a file in order holds at most two decompressed
// chunks at a time; reading one whose chunks all overlap is refused when
// they need more than the budget at once, and holds no more than the budget
// plus two chunks otherwise.
func TestCursorMemory(t *testing.T) {
	base := testMessages(2000)
	shuffled := slices.Clone(base)
	for i := range shuffled {
		shuffled[i].m.LogTime = uint64((i * 7919) % 1000)
	}
	const chunk = 8 << 10
	for _, tc := range []struct {
		name      string
		in        []sent
		budget    int
		maxChunks int
	}{{"sorted", base, 64 << 20, 2}, {"shuffled", shuffled, 4 * chunk, 0}} {
		for _, comp := range []string{CompressionLZ4, CompressionZstd} {
			t.Run(tc.name+"/"+comp, func(t *testing.T) {
				r, err := NewReader(encode(t, Options{Compression: comp, ChunkSize: chunk}, tc.in), "m.mcap", ReaderOptions{})
				if err != nil {
					t.Fatal(err)
				}
				c, err := r.Cursor()
				if err != nil {
					t.Fatal(err)
				}
				c.budget = tc.budget
				c.SeekTime(0)
				if c.peak > uint64(c.budget) {
					if ok, err := c.Next(); ok || !errors.Is(err, ErrTooLarge) {
						t.Fatalf("overlap of %d bytes over a budget of %d: %v %v, want ErrTooLarge", c.peak, c.budget, ok, err)
					}
					c.budget = int(c.peak)
					c.SeekTime(0)
				}
				most, mostBytes, n := 0, 0, 0
				for {
					ok, err := c.Next()
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						break
					}
					n++
					most, mostBytes = max(most, len(c.cache)), max(mostBytes, c.bytes)
				}
				if n != len(tc.in) {
					t.Fatalf("%d messages, want %d", n, len(tc.in))
				}
				if tc.maxChunks > 0 && most > tc.maxChunks {
					t.Errorf("held %d chunks at once, want at most %d", most, tc.maxChunks)
				}
				if limit := c.budget + 2*(chunk+4<<10); mostBytes > limit {
					t.Errorf("held %d bytes of chunks, want at most %d", mostBytes, limit)
				}
				t.Logf("at most %d chunks, %d bytes", most, mostBytes)
			})
		}
	}
}
