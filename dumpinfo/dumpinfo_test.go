package dumpinfo

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestTriggerJSONFields: MarshalJSON's mirror of Trigger has every field,
// in order, under the same JSON name (the overrides' tags aside).
func TestTriggerJSONFields(t *testing.T) {
	a, b := reflect.TypeFor[Trigger](), reflect.TypeFor[triggerJSON]()
	if a.NumField() != b.NumField() {
		t.Fatalf("Trigger has %d fields, triggerJSON %d", a.NumField(), b.NumField())
	}
	for i := range a.NumField() {
		fa, fb := a.Field(i), b.Field(i)
		na, _, _ := strings.Cut(fa.Tag.Get("json"), ",")
		nb, _, _ := strings.Cut(fb.Tag.Get("json"), ",")
		if fa.Name != fb.Name || na != nb {
			t.Errorf("field %d: %s %q, mirrored as %s %q", i, fa.Name, na, fb.Name, nb)
		}
	}
}

// TestTriggerJSONOverrides: pre_ns / post_ns are written only when the
// trigger set them (a set zero included), the effective window always;
// what is written decodes to the same trigger.
func TestTriggerJSONOverrides(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tr      Trigger
		want    []string
		wantNot []string
	}{
		{"none set", Trigger{ID: 1, Reason: "r", TimeNs: 10, FromNs: 7, ToNs: 12},
			[]string{`"from_ns":7`, `"to_ns":12`}, []string{"pre_ns", "post_ns", "pre_set", "post_set"}},
		{"pre set to zero", Trigger{ID: 1, Reason: "r", TimeNs: 10, PreSet: true, FromNs: 10, ToNs: 12},
			[]string{`"pre_ns":0`, `"pre_set":true`, `"from_ns":10`}, []string{"post_ns", "post_set"}},
		{"both set", Trigger{ID: 1, Reason: "r", TimeNs: 10, PreNs: 3, PostNs: 2, PreSet: true, PostSet: true, FromNs: 7, ToNs: 12},
			[]string{`"pre_ns":3`, `"post_ns":2`, `"pre_set":true`, `"post_set":true`}, nil},
	} {
		b, err := json.Marshal(Info{Triggers: []Trigger{tc.tr}})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: %s lacks %s", tc.name, b, w)
			}
		}
		for _, w := range tc.wantNot {
			if strings.Contains(string(b), `"`+w+`"`) {
				t.Errorf("%s: %s has %s", tc.name, b, w)
			}
		}
		d, err := Decode(b)
		if err != nil || len(d.Triggers) != 1 {
			t.Fatalf("%s: decode %s: %v", tc.name, b, err)
		}
		got := d.Triggers[0]
		if got.PreNs != tc.tr.PreNs || got.PostNs != tc.tr.PostNs || got.PreSet != tc.tr.PreSet || got.PostSet != tc.tr.PostSet ||
			got.FromNs != tc.tr.FromNs || got.ToNs != tc.tr.ToNs {
			t.Errorf("%s: round trip %+v, want %+v", tc.name, got, tc.tr)
		}
	}
}

// TestNormalizeOlderDumps: a dump of an older writer gets each trigger's
// window from its overrides, else (one trigger, not a cut) from the dump's
// window; a trigger of which nothing is known keeps none.
func TestNormalizeOlderDumps(t *testing.T) {
	win := func(d Info, i int) [4]int64 {
		from, to, pre, post, _ := d.Triggers[i].Window()
		return [4]int64{from, to, pre, post}
	}
	// overrides without pre_set / post_set (the first writers)
	d, err := Decode([]byte(`{"triggers":[{"id":1,"reason":"r","time_ns":100,"pre_ns":30,"post_ns":20}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := win(d, 0); got != [4]int64{70, 120, 30, 20} || !d.Triggers[0].PreSet || !d.Triggers[0].PostSet {
		t.Errorf("overrides: window %v, trigger %+v", got, d.Triggers[0])
	}
	// the recorder's defaults, written as pre_ns 0 before from_ns existed
	d, _ = Decode([]byte(`{"triggers":[{"id":1,"reason":"r","time_ns":100,"pre_ns":0,"post_ns":0}],"start_ns":70,"end_ns":120}`))
	if got := win(d, 0); got != [4]int64{70, 120, 30, 20} || d.Triggers[0].PreSet {
		t.Errorf("one trigger, dump window: %v %+v", got, d.Triggers[0])
	}
	// two triggers: the dump's window is their hull, not each one's
	d, _ = Decode([]byte(`{"triggers":[{"id":1,"reason":"r","time_ns":100},{"id":2,"reason":"r","time_ns":110}],"start_ns":70,"end_ns":130}`))
	if _, _, _, _, ok := d.Triggers[0].Window(); ok {
		t.Errorf("two triggers without windows: %+v", d.Triggers[0])
	}
	// a cut's window is the cut's
	d, _ = Decode([]byte(`{"triggers":[{"id":1,"reason":"r","time_ns":100}],"start_ns":90,"end_ns":110,"cut":{"of":["a"],"from_ns":90,"to_ns":110,"messages":0}}`))
	if _, _, _, _, ok := d.Triggers[0].Window(); ok {
		t.Errorf("a cut: %+v", d.Triggers[0])
	}
	// a recorded window is kept as it is
	d, _ = Decode([]byte(`{"triggers":[{"id":1,"reason":"r","time_ns":100,"pre_ns":5,"pre_set":true,"from_ns":60,"to_ns":140}],"start_ns":70,"end_ns":120}`))
	if got := win(d, 0); got != [4]int64{60, 140, 40, 40} {
		t.Errorf("recorded window: %v", got)
	}
}
