package report

import (
	"os"
	"testing"
	"time"

	"github.com/edr-lite/edr-lite/internal/demodump"
	"github.com/edr-lite/edr-lite/internal/dumpfile"
	"github.com/edr-lite/edr-lite/schema"
)

func TestProfScratch(t *testing.T) {
	p := os.Getenv("BIG")
	if p == "" {
		t.Skip()
	}
	sch := map[string]schema.Type{}
	for i := 0; i < 50; i++ {
		sch[demodump.LargeTopic(i)] = schema.Type{MessageEncoding: schema.EncodingPacked, Schema: schema.Schema{Name: "x", Encoding: schema.SchemaLayout, Data: []byte(demodump.LargeLayout)}}
	}
	start := time.Now()
	if os.Getenv("ONLYREAD") != "" {
		s, _ := dumpfile.Open(p)
		m := dumpfile.NewMessages(s)
		n := 0
		for {
			ok, _ := m.Next()
			if !ok {
				break
			}
			_ = m.Message()
			n++
		}
		t.Log(n, time.Since(start))
		return
	}
	r, err := FromDumps([]string{p}, DumpOptions{Options: Options{Schemas: sch}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(len(r.Signals), time.Since(start))
}
