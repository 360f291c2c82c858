package main

import (
	"context"
	"sync/atomic"
	"time"
)

// humanWait is the time the running turn spent waiting for the person
// (approvals, forms): reset as a turn begins, added to by the callbacks
// timed wraps (on the library's goroutines), read as the turn ends.
type humanWait struct{ ns atomic.Int64 }

func (w *humanWait) reset()               { w.ns.Store(0) }
func (w *humanWait) total() time.Duration { return time.Duration(w.ns.Load()) }

// timed wraps a callback that waits for the person, adding its time to w.
func timed[T, R any](w *humanWait, f func(context.Context, T) (R, error)) func(context.Context, T) (R, error) {
	return func(ctx context.Context, req T) (R, error) {
		start := time.Now()
		defer func() { w.ns.Add(int64(time.Since(start))) }()
		return f(ctx, req)
	}
}
