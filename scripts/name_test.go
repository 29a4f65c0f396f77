package scripts

import "testing"

// TestOptionsName: Options.Name replaces the name a rule declares, so two
// instances of one rule file load side by side, each firing under its own
// name.
func TestOptionsName(t *testing.T) {
	f := &fired{}
	params := map[string]string{"topic": "s", "high": "10"}
	r, err := LoadShipped("threshold", Options{Params: params, OnTrigger: f.on, Logger: quiet, Name: "speed_limit"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Name() != "speed_limit" || r.Decl().Name != "speed_limit" {
		t.Fatalf("name %q, decl %q, want speed_limit", r.Name(), r.Decl().Name)
	}
	r.Feed(&Message{Topic: "s", TS: at(0), Data: f32(20)})
	if len(f.list) != 1 || f.list[0].Rule != "speed_limit" {
		t.Fatalf("triggers %+v, want one from speed_limit", f.list)
	}
	plain, f2 := shipped(t, "threshold", params)
	if plain.Name() != "threshold" {
		t.Fatalf("without Options.Name: %q", plain.Name())
	}
	plain.Feed(&Message{Topic: "s", TS: at(0), Data: f32(20)})
	if len(f2.list) != 1 || f2.list[0].Rule != "threshold" {
		t.Fatalf("triggers %+v", f2.list)
	}
}
