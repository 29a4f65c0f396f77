package mcap

import (
	"bytes"
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
