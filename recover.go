package acphost

import (
	"context"
	"errors"
	"time"
)

// RecoverOptions turns on crash recovery: when the agent process dies, the
// next call restarts it (with backoff) and re-attaches every live session by
// session/load or session/resume when the agent supports it. A session that
// cannot be re-attached is replaced by a fresh one, and its next turn fails
// with a *RestartError matching ErrContextLost instead of running silently
// without its history.
type RecoverOptions struct {
	// MaxRestarts within Window stop the recovery: the call fails with a
	// *CrashLoopError. Defaults: 5 per minute.
	MaxRestarts int
	Window      time.Duration
	// Backoff is the wait before the first restart after a crash, doubled
	// for each further crash within Window. Default 100ms.
	Backoff time.Duration
}

func (r *RecoverOptions) withDefaults() RecoverOptions {
	o := *r
	if o.MaxRestarts <= 0 {
		o.MaxRestarts = 5
	}
	if o.Window <= 0 {
		o.Window = time.Minute
	}
	if o.Backoff <= 0 {
		o.Backoff = 100 * time.Millisecond
	}
	return o
}

// readyAgent returns a live agent for the next call. An abandoned agent
// (an unconfirmed cancel, writes it stopped reading) is always replaced; a dead one is replaced
// only with ACPOptions.Recover, and otherwise its death is the error.
func (c *ACPClient) readyAgent(ctx context.Context) (*agent, error) {
	select {
	case c.restartSem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.restartSem }()
	c.mu.Lock()
	a, closed := c.ag, c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	reason := error(nil)
	switch {
	case a.poisoned.Load():
		reason = a.poisonCause()
	case c.confinedOtherwise(a):
		reason = errPlanConfinement
	case a.isDead():
		if c.opts.Recover == nil {
			return nil, a.cause
		}
		reason = a.cause
		if err := c.crashBackoff(ctx, reason); err != nil {
			return nil, err
		}
	default:
		return a, nil
	}
	return c.restart(ctx, a, reason)
}

// errPlanConfinement is why an agent is restarted after SetPlanMode: its
// kernel confinement is plan mode's and plan mode is off, or the reverse.
var errPlanConfinement = errors.New("acphost: plan mode changed the agent's kernel confinement")

// confinedOtherwise reports whether a local agent under ACPOptions.Process.Confine
// runs under the other mode's confinement than plan mode now wants, and
// can be restarted without losing a conversation: it re-attaches sessions
// (session/load or resume), or none of its sessions has had a prompt yet.
func (c *ACPClient) confinedOtherwise(a *agent) bool {
	if c.opts.Process.Confine == nil || a.planKernel == c.PlanMode() || a.isDead() {
		return false
	}
	if _, ok := a.link.(*processLink); !ok {
		return false
	}
	return c.canRestart(a)
}

// canRestart reports whether agent a can be replaced without losing a
// conversation: it re-attaches sessions, or none has one yet.
func (c *ACPClient) canRestart(a *agent) bool {
	if a.supports(openLoad) || a.supports(openResume) {
		return true
	}
	c.mu.Lock()
	handles := append([]*Session(nil), c.handles...)
	c.mu.Unlock()
	for _, h := range handles {
		if h.hasConversation() {
			return false
		}
	}
	return true
}

// crashBackoff applies the crash-loop cut-off and waits out the backoff.
func (c *ACPClient) crashBackoff(ctx context.Context, crash error) error {
	o := c.opts.Recover.withDefaults()
	now := time.Now()
	recent := c.crashes[:0]
	for _, t := range c.crashes {
		if now.Sub(t) < o.Window {
			recent = append(recent, t)
		}
	}
	c.crashes = recent
	if len(recent) >= o.MaxRestarts {
		return &CrashLoopError{Restarts: len(recent), Window: o.Window, Last: crash}
	}
	c.crashes = append(c.crashes, now)
	wait := o.Backoff << min(len(recent), 10)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.life.Done():
		return ErrClosed
	}
}

// agentReplaced is the cause given to calls still pending on an agent the
// client replaces: it matches ErrClosed, whatever the reason was.
type agentReplaced struct{ reason error }

func (e agentReplaced) Error() string        { return "acphost: agent replaced: " + e.reason.Error() }
func (e agentReplaced) Is(target error) bool { return target == ErrClosed }

// restart replaces agent a and re-attaches every live session. The old
// agent is stopped at once; its goroutines (maybe running callbacks) are
// joined in the background and by Close.
func (c *ACPClient) restart(ctx context.Context, a *agent, reason error) (*agent, error) {
	a.stop(agentReplaced{reason})
	c.retire(a)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.life, cancel)()
	next, err := c.dial(ctx)
	if err != nil {
		return nil, c.restartError(wrapOp("restarting the agent", err))
	}
	c.mu.Lock()
	handles := append([]*Session(nil), c.handles...)
	c.mu.Unlock()
	for _, h := range handles {
		if err := next.reattach(ctx, h, reason); err != nil {
			next.shutdown(err)
			return nil, c.restartError(wrapOp("re-attaching session "+h.ID(), err))
		}
	}
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.ag = next
	}
	c.mu.Unlock()
	if closed {
		next.shutdown(ErrClosed)
		return nil, ErrClosed
	}
	return next, nil
}

// restartError prefers ErrClosed when Close interrupted the restart.
func (c *ACPClient) restartError(err error) error {
	if c.life.Err() != nil {
		return ErrClosed
	}
	return err
}

// retire joins a replaced agent in the background.
func (c *ACPClient) retire(a *agent) {
	c.mu.Lock()
	c.retired[a] = true
	c.mu.Unlock()
	c.joins.Go(func() {
		a.join()
		c.mu.Lock()
		delete(c.retired, a)
		c.mu.Unlock()
	})
}

// reattach opens h on a fresh agent: load, else resume, else a new session
// whose lost context is reported to h's next turn. A session that never had
// a conversation (see Session.conversed) loses nothing: agents often store
// a session only at its first prompt and refuse to load one that had none,
// and the new session it is given instead is reported without ContextLost,
// so its next turn runs.
func (a *agent) reattach(ctx context.Context, h *Session, reason error) error {
	old := h.ID()
	var refused error
	for _, how := range []openKind{openLoad, openResume} {
		if !a.supports(how) {
			continue
		}
		err := a.open(ctx, h, how)
		if err == nil {
			h.noteRestart(&RestartError{Reason: reason, OldSessionID: old, NewSessionID: old, How: openMethods[how][len("session/"):]})
			return nil
		}
		var rpc *RPCError
		if !errors.As(err, &rpc) {
			return err // the new agent failed, not the session
		}
		refused = errors.Join(refused, err) // the agent does not have the session after all: try the next way
	}
	if err := a.open(ctx, h, openNew); err != nil {
		return err
	}
	h.noteRestart(&RestartError{Reason: reason, OldSessionID: old, NewSessionID: h.ID(), How: "new", ContextLost: h.hasConversation(), Refused: refused})
	return nil
}

func (s *Session) noteRestart(r *RestartError) {
	s.mu.Lock()
	s.restarted = r
	s.mu.Unlock()
}

func (a *agent) isDead() bool {
	select {
	case <-a.dead:
		return true
	default:
		return false
	}
}
