package ask

import (
	"context"
	"sync/atomic"
	"time"
)

// Wait is the time the running turn spent waiting for the person
// (approvals, forms): reset as a turn begins, added to by the callbacks
// Timed wraps (on the library's goroutines), read as the turn ends.
type Wait struct{ ns atomic.Int64 }

// Reset starts a turn's count.
func (w *Wait) Reset() { w.ns.Store(0) }

// Total is the time counted since Reset.
func (w *Wait) Total() time.Duration { return time.Duration(w.ns.Load()) }

// Timed wraps a callback that waits for the person, adding its time to w.
func Timed[T, R any](w *Wait, f func(context.Context, T) (R, error)) func(context.Context, T) (R, error) {
	return func(ctx context.Context, req T) (R, error) {
		start := time.Now()
		defer func() { w.ns.Add(int64(time.Since(start))) }()
		return f(ctx, req)
	}
}
