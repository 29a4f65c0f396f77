package engine

// DumpConfig configures dump files (issue 4 fills this in).
type DumpConfig struct {
	// Dir is where dumps are written; "" disables dumps.
	Dir string
}

func (d DumpConfig) withDefaults() DumpConfig { return d }

func (d *DumpConfig) validate(c *Config) error { return nil }
