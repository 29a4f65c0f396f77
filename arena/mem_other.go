//go:build !linux

package arena

func mapSlab(size int, lock bool) ([]byte, error) { return nil, ErrNotSupported }

func unmapSlab(mem []byte) error { return ErrNotSupported }

func pageSize() int { return 4096 }
