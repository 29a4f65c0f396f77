//go:build !linux

package durable

// Ensure does nothing where fallocate is not available.
func (d *File) Ensure(end int64) error { return nil }

func (d *File) wrote(n int64) { d.off += n }

func (d *File) writev(pieces [][]byte) error {
	for _, p := range pieces {
		n, err := d.f.Write(p)
		d.wrote(int64(n))
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *File) datasync() error { return d.f.Sync() }

// LowerIOPriority does nothing where I/O priorities are not supported.
func LowerIOPriority() {}
