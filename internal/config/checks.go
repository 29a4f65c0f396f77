package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/edr-lite/edr-lite/internal/units"
)

// Checks is a closed-loop replay's checks file ("edr-lite replay --checks
// FILE"): the FeedCheck of each expected topic. TOML:
//
//	[[check]]
//	topic = "planner/brake"       # glob over the recorded topic name ("" = every topic)
//	mode = "tolerance"            # exact (default), tolerance or none
//	abs = 1e-6                    # tolerance: |got - recorded| <= abs + rel*|recorded|
//	rel = 1e-5
//	fields = ["command"]          # only these fields (and what lies under them)
//	align = "seq"                 # seq (default), time (producer time) or nearest
//	window = "5ms"                # nearest: how far apart; none: the latency difference allowed
//	layout = "brake.layout"       # the messages' packed layout (a file, relative to this one)
//	# protobuf = "planner.desc"   # or a FileDescriptorSet file ...
//	# message = "planner.Brake"   # ... and the message name
//	# json = true                 # or: the messages are JSON
//
// or the same keys in JSON ({"check": [{"topic": ..., "window": "5ms"}]}),
// for a file whose name ends in .json. The first check whose topic glob
// matches a topic applies.
type Checks struct {
	Check []Check `toml:"check" json:"check"`
}

// Check is one [[check]] of a checks file.
type Check struct {
	Topic    string   `toml:"topic" json:"topic"`
	Mode     string   `toml:"mode" json:"mode"`
	Abs      float64  `toml:"abs" json:"abs"`
	Rel      float64  `toml:"rel" json:"rel"`
	Fields   []string `toml:"fields" json:"fields"`
	Align    string   `toml:"align" json:"align"`
	Window   Duration `toml:"window" json:"window"`
	Layout   string   `toml:"layout" json:"layout"`
	Protobuf string   `toml:"protobuf" json:"protobuf"`
	Message  string   `toml:"message" json:"message"`
	JSON     bool     `toml:"json" json:"json"`
}

// UnmarshalJSON reads a duration written as in TOML ("15s", "500ms", 0).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case float64:
		if x != 0 {
			return fmt.Errorf("duration %v has no unit (write e.g. \"%vs\")", x, x)
		}
		*d = 0
		return nil
	case string:
		p, err := units.ParseDuration(x)
		if err != nil {
			return err
		}
		if p < 0 {
			return fmt.Errorf("duration %q is negative", x)
		}
		*d = Duration(p)
		return nil
	}
	return fmt.Errorf("want a duration such as \"5ms\", got %s", b)
}

// LoadChecks reads and parses the checks file at path.
func LoadChecks(path string) (*Checks, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseChecks(path, data)
}

// maxChecks bounds the [[check]] entries of a file.
const maxChecks = 4096

// ParseChecks decodes a checks file (named name in errors: JSON when it
// ends in .json, else TOML) strictly, fills the defaults (mode exact,
// align seq) and checks every entry. Schema file names are returned as
// written (the caller resolves them relative to the file).
func ParseChecks(name string, data []byte) (*Checks, error) {
	var c Checks
	if strings.HasSuffix(strings.ToLower(name), ".json") {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return nil, invalidf("%s: offset %d: %v", name, se.Offset, err)
			}
			return nil, invalidf("%s: %v", name, err)
		}
		if dec.More() {
			return nil, invalidf("%s: offset %d: data after the JSON object", name, dec.InputOffset())
		}
	} else {
		md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&c)
		if err != nil {
			var pe toml.ParseError
			if errors.As(err, &pe) {
				return nil, invalidf("%s:%d: %s", name, pe.Position.Line, pe.Message)
			}
			return nil, invalidf("%s: %v", name, err)
		}
		if und := md.Undecoded(); len(und) > 0 {
			k := und[0]
			return nil, invalidf("%s:%d: unknown key %q", name, lineOfKey(data, k), k.String())
		}
	}
	if len(c.Check) == 0 {
		return nil, invalidf("%s: no [[check]]", name)
	}
	if len(c.Check) > maxChecks {
		return nil, invalidf("%s: %d checks, at most %d", name, len(c.Check), maxChecks)
	}
	for i := range c.Check {
		if err := c.Check[i].check(); err != nil {
			return nil, invalidf("%s: check %d (topic %q): %v", name, i+1, c.Check[i].Topic, err)
		}
	}
	return &c, nil
}

func (k *Check) check() error {
	if k.Mode == "" {
		k.Mode = "exact"
	}
	if k.Align == "" {
		k.Align = "seq"
	}
	if err := oneOf(k.Mode, "exact", "tolerance", "none"); err != nil {
		return fmt.Errorf("mode = %w", err)
	}
	if err := oneOf(k.Align, "seq", "time", "nearest"); err != nil {
		return fmt.Errorf("align = %w", err)
	}
	if _, err := path.Match(k.Topic, ""); err != nil {
		return fmt.Errorf("topic glob: %v", err)
	}
	for _, v := range []float64{k.Abs, k.Rel} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("abs and rel must be finite and 0 or more, got %v", v)
		}
	}
	if k.Align == "nearest" && k.Window <= 0 {
		return errors.New("align nearest needs a window")
	}
	n := 0
	for _, set := range []bool{k.Layout != "", k.Protobuf != "", k.JSON} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return errors.New("give one of layout, protobuf and json")
	case k.Protobuf != "" && k.Message == "":
		return errors.New("protobuf needs the message name (message = \"pkg.Type\")")
	case k.Message != "" && k.Protobuf == "":
		return errors.New("message is the name of a message in the protobuf file")
	}
	for _, f := range k.Fields {
		if f == "" {
			return errors.New("an empty field path")
		}
	}
	return nil
}

// invalidError is a problem of a file read apart from the configuration
// (a checks file): its text, matching ErrInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// lineOfKey finds the line where the last component of key is assigned, at
// or after the header of its table; 0 when not found.
func lineOfKey(data []byte, key toml.Key) int {
	if len(key) == 0 {
		return 0
	}
	last := regexp.QuoteMeta(key[len(key)-1])
	re := regexp.MustCompile(`^\s*("?)` + last + `("?)\s*=`)
	hdr := regexp.MustCompile(`^\s*\[+\s*([^\]]+?)\s*\]+`)
	table := strings.Join(key[:len(key)-1], ".")
	cur := ""
	for i, line := range strings.Split(string(data), "\n") {
		if m := hdr.FindStringSubmatch(line); m != nil {
			cur = m[1]
			if cur == strings.Join(key, ".") {
				return i + 1
			}
			continue
		}
		if cur == table && re.MatchString(line) {
			return i + 1
		}
	}
	return 0
}
