package acphost

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/acphost/acphost/internal/wire"
)

// errNotReading is why an agent whose writes were aborted is replaced.
var errNotReading = fmt.Errorf("%w: %w", ErrCancelUnconfirmed, ErrAgentNotReading)

// writes watches the agent's writes, for an agent that stops reading its
// stdin: the guards of cancelled calls (writeGuard), the WriteTimeout
// watch, and why the writes were aborted. What it needs of the agent it is
// given: the connection, the agent's ctx, lift, and poison, stop and
// deathCause to give up on it.
type writes struct {
	conn         *wire.Conn
	ctx          context.Context // the agent's
	grace        time.Duration   // CancelGrace
	timeout      time.Duration   // WriteTimeout
	lift         func(delta int)
	poison       func(cause error)
	stop         func(cause error)
	deathCause   func(fallback error) error
	mu           sync.Mutex
	abortedBy    error // why the writes were aborted, first wins
	abortedDeath bool  // abortedBy is the agent's death
}

// writeGuard bounds a call's writes to the agent once the call is
// cancelled: if the call is still running CancelGrace after it was armed —
// blocked writing to an agent that stopped reading its stdin — the agent's
// writes are aborted, which fails the call, and the agent is never reused
// (its stdin may hold half a message). A call that returns in time, as
// every call to a live agent does, releases the guard unharmed.
type writeGuard struct {
	w        *writes
	stopCtx  func() bool // ends the ctx trigger
	mu       sync.Mutex
	released bool
	cause    error         // what armed it
	aborted  bool          // the agent's writes were abandoned; read after release
	done     chan struct{} // closed by release
	watcher  chan struct{} // closed when the armed watcher has ended; nil until armed
}

// guard returns a guard armed when ctx ends (never, for a ctx that cannot
// end, unless arm is called).
func (w *writes) guard(ctx context.Context) *writeGuard {
	g := &writeGuard{w: w, done: make(chan struct{})}
	if ctx.Done() != nil {
		g.stopCtx = context.AfterFunc(ctx, func() { g.arm(context.Cause(ctx)) })
	}
	return g
}

// arm starts the grace period, once, for cause (the call's cancellation).
func (g *writeGuard) arm(cause error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.watcher != nil || g.released {
		return
	}
	g.cause = cause
	g.watcher = make(chan struct{})
	go g.watch(g.watcher)
}

// armedBy returns the cause the guard was armed for, if any.
func (g *writeGuard) armedBy() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cause
}

// watch waits out the grace. Meanwhile the queue's bound is lifted: a
// host whose OnUpdate is slow must not stop reading the agent's stdout, or
// an agent that writes synchronously would stop reading its stdin and be
// blamed for it.
func (g *writeGuard) watch(ended chan struct{}) {
	defer close(ended)
	g.w.lift(1)
	defer g.w.lift(-1)
	t := time.NewTimer(g.w.grace)
	defer t.Stop()
	select {
	case <-g.done:
	case <-g.w.ctx.Done(): // the agent is being shut down: its writes fail anyway
	case <-t.C:
		g.aborted = true // release reads it after ended is closed
		g.w.abort()
	}
}

// release ends the guard; it returns once its watcher, if armed, is done.
func (g *writeGuard) release() {
	if g.stopCtx != nil {
		g.stopCtx()
	}
	g.mu.Lock()
	g.released = true
	w := g.watcher
	g.mu.Unlock()
	close(g.done)
	if w != nil {
		<-w
	}
}

// abort gives up on an agent that stopped reading its stdin.
func (w *writes) abort() {
	w.poison(errNotReading)
	w.abortFor(errNotReading, false)
}

// abortFor aborts the agent's writes, recording why (the first reason
// wins): death tells notReading to report the agent's death.
func (w *writes) abortFor(why error, death bool) {
	w.mu.Lock()
	if w.abortedBy == nil {
		w.abortedBy, w.abortedDeath = why, death
	}
	w.mu.Unlock()
	w.conn.AbortWrites()
}

// notReading returns the error to report for a call whose write ended
// with err, cause being the call's cancellation (nil when it was not
// cancelled); errors other than aborted writes are returned unchanged.
// Writes are aborted when the agent is abandoned or dies; the first to
// abort them says why (abortFor).
func (w *writes) notReading(err, cause error) error {
	if !errors.Is(err, wire.ErrWritesAborted) {
		return err
	}
	w.mu.Lock()
	why, death := w.abortedBy, w.abortedDeath
	w.mu.Unlock()
	switch {
	case death:
		return w.deathCause(err)
	case cause != nil:
		return fmt.Errorf("%w: %w", why, cause)
	case errors.Is(why, ErrCancelUnconfirmed): // another call's cancel
		why = ErrAgentNotReading
	}
	return fmt.Errorf("acphost: the agent's writes were abandoned; it is replaced before the next turn: %w", why)
}

// watch stops the agent once a write to it has been blocked for
// WriteTimeout: it stopped reading its stdin, so nothing the host says (a
// permission answer, a cancel, the next prompt) can reach it. While a write
// is seen blocked, the queue's bound is lifted, as during a cancel's grace:
// a slow OnUpdate must not get an agent that writes synchronously blamed.
func (w *writes) watch() {
	limit := w.timeout
	tick := time.NewTicker(max(limit/4, 10*time.Millisecond))
	defer tick.Stop()
	lifted := false
	defer func() {
		if lifted {
			w.lift(-1)
		}
	}()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-tick.C:
		}
		blocked := w.conn.WriteBlockedFor()
		switch {
		case blocked >= limit:
			w.abandonWedged(fmt.Errorf("%w: a write was blocked for %v (%w)", ErrAgentNotReading, blocked.Round(time.Millisecond), ErrWriteTimeout))
			return
		case (blocked > 0) != lifted:
			lifted = !lifted
			w.lift(liftDelta(lifted))
		}
	}
}

func liftDelta(lift bool) int {
	if lift {
		return 1
	}
	return -1
}

// abandonWedged stops an agent that stopped reading, for cause. Its writes
// are aborted first, so that the blocked one reports cause (see
// notReading); then every pending call and turn ends with cause, and the
// process is ended. The client replaces it before the next turn.
func (w *writes) abandonWedged(cause error) {
	w.poison(cause)
	w.abortFor(cause, false)
	w.stop(cause)
}
