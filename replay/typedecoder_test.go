package replay

import (
	"strings"
	"testing"

	"github.com/edr-lite/edr-lite/ingest"
)

// TestTypeDecoder: a recorded type with an encoding and schema gives the
// decoder of its messages; raw bytes and a name alone give none; a schema
// that does not load gives none, and a tolerance check says why.
func TestTypeDecoder(t *testing.T) {
	for _, c := range []struct {
		typ  ingest.Type
		want string
	}{
		{ingest.Packed("own.Cmd", "f32le command; u8 brake"), "the dump's type x-edr-packed own.Cmd"},
		{ingest.Named("own.Cmd"), ""},
		{ingest.Raw("own.Cmd"), ""},
		{ingest.Packed("own.Bad", "f33le nope"), ""},
	} {
		d, how, ok := TypeDecoder(&Topic{Name: "planner/brake", Type: c.typ})
		if how != c.want || ok != (c.want != "") || (d != nil) != ok {
			t.Errorf("%s: %v %q %v", c.typ, d, how, ok)
		}
	}
	l := &Loop{opts: LoopOptions{Checks: []Check{{Mode: CheckTolerance}}}}
	_, err := l.checkFor(&Topic{Name: "planner/brake", Type: ingest.Packed("own.Bad", "f33le nope")})
	if err == nil || !strings.Contains(err.Error(), "the dump's type x-edr-packed own.Bad does not give one") {
		t.Errorf("tolerance over a schema that does not load: %v", err)
	}
}
