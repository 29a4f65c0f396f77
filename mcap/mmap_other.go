//go:build !linux

package mcap

import "os"

type mapping struct{ b []byte }

func mapFile(string) (*mapping, error) { return nil, ErrNotSupported }

func (m *mapping) close() error { return nil }

type mmapSink struct{}

func newMmapSink(*os.File, int) (*mmapSink, error) { return nil, ErrNotSupported }

func (s *mmapSink) Write([]byte) (int, error) { return 0, ErrNotSupported }
func (s *mmapSink) finish() error             { return ErrNotSupported }
func (s *mmapSink) abort()                    {}
