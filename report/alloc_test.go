//go:build !race

package report

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/edr-lite/edr-lite/internal/demodump"
	"github.com/edr-lite/edr-lite/schema"
)

// largeAnalyzer is an Analyzer over 10 minutes with one packed topic of
// demodump.LargeLayout (two plotted fields), and a message maker.
func largeAnalyzer(tb testing.TB) (*Analyzer, int, func(i int) (int64, []byte)) {
	tb.Helper()
	typ := schema.Type{MessageEncoding: schema.EncodingPacked, Schema: schema.Schema{Name: "s", Encoding: schema.SchemaLayout,
		Data: []byte(demodump.LargeLayout)}}
	a, err := NewAnalyzer(Options{}, 0, 600e9, nil)
	if err != nil {
		tb.Fatal(err)
	}
	id := a.Topic(TopicSpec{Name: "bus/x", Schema: typ, HasSchema: true, SchemaFrom: "test"})
	buf := make([]byte, 8)
	return a, id, func(i int) (int64, []byte) {
		binary.LittleEndian.PutUint32(buf, math.Float32bits(float32(math.Sin(float64(i)/100))))
		binary.LittleEndian.PutUint32(buf[4:], uint32(i))
		return int64(i) * 1e6, buf
	}
}

// TestAnalyzerMessageAllocs: once a topic's distributions are bucketed and
// its plots folded into columns, a message of a packed topic allocates
// nothing.
func TestAnalyzerMessageAllocs(t *testing.T) {
	a, id, msg := largeAnalyzer(t)
	i := 0
	for ; i < 20000; i++ { // past ExactValues and 2×Columns samples
		ts, b := msg(i)
		a.Message(id, ts, ts-1e5, b)
	}
	if n := testing.AllocsPerRun(10000, func() {
		ts, b := msg(i)
		a.Message(id, ts, ts-1e5, b)
		i++
	}); n != 0 {
		t.Errorf("Analyzer.Message: %g allocations per message", n)
	}
}

// BenchmarkAnalyzerMessage is the analysing goroutine's cost per message
// of a packed topic with two plotted fields, against the same run's
// baseline of reading the two fields with encoding/binary.
func BenchmarkAnalyzerMessage(b *testing.B) {
	b.Run("analyzer", func(b *testing.B) {
		a, id, msg := largeAnalyzer(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			ts, m := msg(i)
			a.Message(id, ts, ts-1e5, m)
			i++
		}
	})
	b.Run("baseline=decode", func(b *testing.B) {
		_, _, msg := largeAnalyzer(b)
		b.ReportAllocs()
		i := 0
		var sum float64
		for b.Loop() {
			_, m := msg(i)
			sum += float64(math.Float32frombits(binary.LittleEndian.Uint32(m))) + float64(binary.LittleEndian.Uint32(m[4:]))
			i++
		}
		sink = sum
	})
}

var sink float64
