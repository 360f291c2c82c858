package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// stallWatch ends a download that stalls: fewer than quantum bytes in
// timeout, from its start or from the last time quantum bytes had come.
// Counting in quanta, not bytes, is what makes a trickle (a byte now and
// then, each before the timeout) a stall.
type stallWatch struct {
	timer   *time.Timer
	timeout time.Duration
	quantum int64
	err     error
	ctx     context.Context

	mu    sync.Mutex
	since int64 // bytes since the timer was last set
}

// watchStall returns ctx cancelled when the download of what stalls (zero
// timeout and quantum: the defaults), the watch to tell of each arrival,
// and the function that stops it.
func watchStall(ctx context.Context, what string, timeout time.Duration, quantum int64) (context.Context, *stallWatch, func()) {
	if timeout <= 0 {
		timeout = DefaultStallTimeout
	}
	if quantum <= 0 {
		quantum = DefaultStallBytes
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w := &stallWatch{timeout: timeout, quantum: quantum, ctx: ctx,
		err: fmt.Errorf("%w: %w: %s: less than %d bytes in %v", ErrDownload, ErrStalled, what, quantum, timeout)}
	w.timer = time.AfterFunc(timeout, func() { cancel(w.err) })
	return ctx, w, func() {
		w.timer.Stop()
		cancel(nil)
	}
}

// arrived counts n bytes come; a whole quantum sets the timer again.
func (w *stallWatch) arrived(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.since += int64(n); w.since >= w.quantum {
		w.since = 0
		w.timer.Reset(w.timeout)
	}
}

// cause is err, or the stall when the download failed because of it.
func (w *stallWatch) cause(err error) error {
	if err != nil && errors.Is(context.Cause(w.ctx), ErrStalled) {
		return w.err
	}
	return err
}

// reader is r, telling w of what it reads.
func (w *stallWatch) reader(r io.Reader) io.Reader { return &watchedReader{r, w} }

type watchedReader struct {
	r io.Reader
	w *stallWatch
}

func (r *watchedReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.w.arrived(n)
	return n, err
}
