package acphost

import (
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

// errPlanConfinement is why an agent is restarted after SetPlanMode: its
// kernel confinement is plan mode's and plan mode is off, or the reverse.
var errPlanConfinement = errors.New("acphost: plan mode changed the agent's kernel confinement")

// agentReplaced is the cause given to calls still pending on an agent the
// client replaces: it matches ErrClosed, whatever the reason was.
type agentReplaced struct{ reason error }

func (e agentReplaced) Error() string        { return "acphost: agent replaced: " + e.reason.Error() }
func (e agentReplaced) Is(target error) bool { return target == ErrClosed }
