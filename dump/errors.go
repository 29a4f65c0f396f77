package dump

import (
	"errors"
	"fmt"
)

var (
	// ErrNotStarted is returned by Trigger before Start or after Stop.
	ErrNotStarted = errors.New("dump: dumper not started")
	// ErrRateLimited is returned by Trigger when Config.MaxPerMinute dumps
	// were already started in the last minute.
	ErrRateLimited = errors.New("dump: rate limit reached")
	// ErrNoTopics is returned by Trigger when no topic matches.
	ErrNoTopics = errors.New("dump: trigger selects no topic")
	// ErrDiskLow is a dump result error: writing it would leave less than
	// Config.MinFreeDisk free.
	ErrDiskLow = errors.New("dump: not enough free disk for the dump")
	// ErrStopped is a dump result error: the dumper stopped before the
	// dump could be finished; no file was kept.
	ErrStopped = errors.New("dump: stopped before the dump finished")
	// ErrUnknownTrigger is returned by Wait for an id never handed out (or
	// long forgotten).
	ErrUnknownTrigger = errors.New("dump: unknown trigger id")
)

// ConfigError reports an invalid configuration field.
type ConfigError struct {
	Field  string // e.g. "Dir", "Policy"
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("dump: config: %s: %s", e.Field, e.Reason)
}

func configErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
