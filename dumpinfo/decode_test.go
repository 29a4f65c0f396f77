package dumpinfo

import (
	"errors"
	"strings"
	"testing"
)

// TestDecodeBounded: a dump information of more objects than MaxObjects is
// refused before it is decoded; braces inside strings do not count; a
// normal one decodes.
func TestDecodeBounded(t *testing.T) {
	bomb := `{"topics":[` + strings.Repeat(`{},`, MaxObjects) + `{}]}`
	if _, err := Decode([]byte(bomb)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%d topic accounts: %v, want ErrTooLarge", MaxObjects+1, err)
	}
	reason := strings.Repeat(`{\"`, MaxObjects+1)
	d, err := Decode([]byte(`{"triggers":[{"reason":"` + reason + `"}],"topics":[{"topic":"a","messages":3}]}`))
	if err != nil || len(d.Triggers) != 1 || d.Topics[0].Messages != 3 {
		t.Fatalf("braces in a string: %+v, %v", d, err)
	}
	if _, err := Decode([]byte(strings.Repeat(" ", MaxJSONSize+1))); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversize JSON: %v", err)
	}
}
