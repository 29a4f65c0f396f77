package replay

// Discard is an Output that drops every message: for measuring the
// player's own throughput.
type Discard struct{}

// Open does nothing.
func (Discard) Open([]Topic) error { return nil }

// Write does nothing.
func (Discard) Write(*Message) error { return nil }

// Close does nothing.
func (Discard) Close() error { return nil }

// OutputFunc adapts a function to an Output whose Open and Close do
// nothing.
type OutputFunc func(m *Message) error

// Open does nothing.
func (OutputFunc) Open([]Topic) error { return nil }

// Write calls f(m).
func (f OutputFunc) Write(m *Message) error { return f(m) }

// Close does nothing.
func (OutputFunc) Close() error { return nil }
