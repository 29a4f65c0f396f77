//go:build !linux

package shm

import "os"

func watchDir(dir string) (*os.File, error)                          { return nil, ErrNotSupported }
func readEvents(f *os.File, out chan<- string, stop <-chan struct{}) {}
