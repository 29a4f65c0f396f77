package scripts

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/edr-lite/edr-lite/internal/suggest"
)

// Shipped holds the rules shipped with edr-lite, as rules/<name>.lua.
//
//go:embed rules/*.lua rules/README.md
var Shipped embed.FS

// ShippedNames lists the shipped rules by name (file name without .lua).
func ShippedNames() []string {
	ents, _ := fs.ReadDir(Shipped, "rules")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".lua"); ok {
			out = append(out, n)
		}
	}
	return out
}

// LoadShipped loads a shipped rule by name, e.g. "hard_brake".
func LoadShipped(name string, opts Options) (*Rule, error) {
	p := path.Join("rules", name+".lua")
	b, err := Shipped.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%w: no shipped rule %q%s (shipped: %s)", ErrNoRule, name,
			suggest.DidYouMean(name, ShippedNames()), strings.Join(ShippedNames(), ", "))
	}
	r, err := LoadSource(p, string(b), opts)
	if err != nil {
		return nil, err
	}
	r.shipped = true
	return r, nil
}
