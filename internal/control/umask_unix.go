//go:build unix

package control

import "syscall"

// umask sets the process umask so the socket is created owner-only, closing
// the window between bind and chmod.
func umask(m int) int { return syscall.Umask(m) }
