//go:build !ecu

// The bandwidth limiter, the request bodies read through it and the stall
// watchdog of the S3 calls (client_s3.go): the ECU build, which does not
// upload, has none of them.

package upload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// limiter is a token bucket of bytes shared by every request of an
// uploader: Bandwidth bytes per second, with a burst of a tenth of a second
// (at least 4 KiB, at most 1 MiB) so a slow link is never flooded.
type limiter struct {
	rate  float64 // bytes per second; 0 = no cap
	burst int

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newLimiter(bytesPerSec int64) *limiter {
	l := &limiter{rate: float64(bytesPerSec)}
	l.burst = int(min(max(bytesPerSec/10, 4<<10), 1<<20))
	return l
}

// take waits until n bytes may go, or ctx ends. n is at most burst.
func (l *limiter) take(ctx context.Context, n int) error {
	if l.rate == 0 || n <= 0 {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	if l.last.IsZero() {
		l.tokens = float64(l.burst)
	} else {
		l.tokens = min(float64(l.burst), l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	l.tokens -= float64(n)
	wait := time.Duration(0)
	if l.tokens < 0 {
		wait = time.Duration(-l.tokens / l.rate * float64(time.Second))
	}
	l.mu.Unlock()
	if wait == 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// bodyReader is the body of one request: a section of the file, read
// through the limiter, counting what was sent (this request's progress,
// and the uploader's total, which a rewind never lowers) and when (the
// stall watchdog). Seek rewinds it for the HTTP client's retries of
// a connection that failed before anything was sent.
type bodyReader struct {
	ctx   context.Context
	sr    *io.SectionReader
	lim   *limiter
	sent  *atomic.Int64 // bytes of this request sent so far
	total *atomic.Int64 // bytes of every request sent, resends included
	seen  *atomic.Int64 // unix ns of the last progress
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.lim.rate > 0 && len(p) > b.lim.burst {
		p = p[:b.lim.burst]
	}
	n, err := b.sr.Read(p)
	if n > 0 {
		if werr := b.lim.take(b.ctx, n); werr != nil {
			return 0, werr
		}
		b.sent.Add(int64(n))
		b.total.Add(int64(n))
		b.seen.Store(time.Now().UnixNano())
	}
	return n, err
}

func (b *bodyReader) Seek(off int64, whence int) (int64, error) {
	n, err := b.sr.Seek(off, whence)
	if err == nil {
		b.sent.Store(n)
	}
	return n, err
}

// watchdog cancels a request that made no progress for stall: the body
// reader and the response both touch seen.
func watchdog(ctx context.Context, stall time.Duration, seen *atomic.Int64) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	seen.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(min(stall/4, time.Second))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if now.Sub(time.Unix(0, seen.Load())) > stall {
					cancel(errStalled)
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// body opens a section of f for one request and a watchdog over it.
func (c *client) body(ctx context.Context, f *os.File, off, n int64) (context.Context, *bodyReader, func()) {
	var seen atomic.Int64
	ctx, done := watchdog(ctx, c.stall, &seen)
	c.sent.Store(0)
	return ctx, &bodyReader{ctx: ctx, sr: io.NewSectionReader(f, off, n), lim: c.lim, sent: &c.sent, total: &c.total, seen: &seen}, done
}

// cause returns the watchdog's cause when it cancelled the request.
func cause(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errStalled) {
		return fmt.Errorf("%w for %v: %v", errStalled, "the stall timeout", err)
	}
	return err
}
