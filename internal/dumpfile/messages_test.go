package dumpfile

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/pack"
)

// writePack writes messages "topic@done" (gen = done-1) in the order given,
// three per frame.
func writePack(t *testing.T, name string, msgs ...string) *Source {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	w, err := pack.Create(p, pack.WriterOptions{TargetFrameSize: 12})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		var topic string
		var done int64
		fmt.Sscanf(strings.Replace(m, "@", " ", 1), "%s %d", &topic, &done)
		if err := w.Add(topic, "", nil, done-1, done, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := pack.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return FromPack(r)
}

func TestMessagesMergeAndSeek(t *testing.T) {
	a := writePack(t, "a.pack", "a@10", "a@20", "a@30", "a@40", "a@50", "a@60")
	b := writePack(t, "b.pack", "b@5", "b@20", "b@35", "b@60", "b@61")
	f := func(from int64, want string) {
		t.Helper()
		m := NewMessages(a, b)
		if from != 0 {
			if err := m.SeekTime(from); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for {
			ok, err := m.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			msg := m.Message()
			got = append(got, fmt.Sprintf("%s/%d", msg.Data, m.Source()))
			if msg.DoneNs != m.Time() || msg.TimeNs != m.Time() || msg.GenNs != msg.DoneNs-1 {
				t.Fatalf("Time %d for a message done at %d (%+v)", m.Time(), msg.DoneNs, msg)
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("from %d:\n got %s\nwant %s", from, strings.Join(got, " "), want)
		}
	}
	all := "b@5/1 a@10/0 a@20/0 b@20/1 a@30/0 b@35/1 a@40/0 a@50/0 a@60/0 b@60/1 b@61/1"
	f(0, all)
	f(-5, all)
	f(20, "a@20/0 b@20/1 a@30/0 b@35/1 a@40/0 a@50/0 a@60/0 b@60/1 b@61/1")
	f(36, "a@40/0 a@50/0 a@60/0 b@60/1 b@61/1") // inside frames of both files
	f(61, "b@61/1")
	f(62, "")

	// seeking again restarts the merge
	m := NewMessages(a, b)
	m.SeekTime(60)
	m.Next()
	m.SeekTime(0)
	if ok, _ := m.Next(); !ok || m.Time() != 5 {
		t.Errorf("after a second SeekTime: first message at %d", m.Time())
	}
}
