package durable

import (
	"errors"
	"os"
)

// SyncDir makes a rename in dir durable (fsync of the directory). A file
// system that cannot sync directories is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) {
		return nil
	}
	return err
}
