package capture

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// runLoop is the Run of both sources: wait on the runtime poller until
// ready reports data (ready runs with the socket's read lock, once at
// first and after every readiness event), then call step; until ctx is
// done (ctx.Err()), Close (nil) or an error.
func (l *lifecycle) runLoop(ctx context.Context, dl interface{ SetReadDeadline(time.Time) error },
	rc syscall.RawConn, ready func(fd uintptr) bool, name string, step func() error) error {
	if err := l.start(); err != nil {
		return err
	}
	defer l.finish()
	_ = dl.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = dl.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		err := rc.Read(ready)
		switch {
		case l.isClosed():
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return fmt.Errorf("capture: %s: %w", name, err)
		}
		if err := step(); err != nil {
			return fmt.Errorf("capture: %s: %w", name, err)
		}
	}
}
