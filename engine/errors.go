package engine

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed is returned after the recorder is closed.
	ErrClosed = errors.New("engine: recorder closed")
	// ErrExcluded is returned by Discover for a topic the include/exclude
	// globs leave out.
	ErrExcluded = errors.New("engine: topic excluded by configuration")
	// ErrTooManyTopics is returned by Discover when the topic table is full.
	ErrTooManyTopics = errors.New("engine: topic table full")
	// ErrUnknownTopic is returned for a TopicID the recorder never handed out.
	ErrUnknownTopic = errors.New("engine: unknown topic")
	// ErrNoMemory is returned by Discover when the cache cannot hold the
	// topic's ring.
	ErrNoMemory = errors.New("engine: cache exhausted")
	// ErrTopicGone is returned for a topic whose ring has been freed.
	ErrTopicGone = errors.New("engine: topic ring freed")
)

// ConfigError reports an invalid configuration field.
type ConfigError struct {
	Field  string // e.g. "CacheSize", "Topics[2].Pre"
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("engine: config: %s: %s", e.Field, e.Reason)
}

func configErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
