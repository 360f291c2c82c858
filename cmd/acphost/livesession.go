package main

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
)

// liveSession is what a run has open and what Ctrl-C, acphost cancel and
// the session's record read while a turn runs: the agent, the session
// prompts go to and its record, and the running turn. Any goroutine may
// call its methods; none of them calls out while holding mu.
type liveSession struct {
	mu          sync.Mutex
	client      *acphost.ACPClient
	startCancel context.CancelFunc // set while the agent starts
	sess        *acphost.Session   // the session prompts go to
	rec         state.Record       // its record in the store, once written (ID "" before)
	ctl         *control.Server    // the control socket, nil without one

	turnCancel  context.CancelFunc // set while a turn runs
	interrupted bool               // Ctrl-C already cancelled the running turn
	// permFail names the permission request that ended the turn under
	// --non-interactive-permissions fail.
	permFail string
	// turnSince is when the running turn started (zero between turns),
	// and released that the process let go of its session: both go in
	// the session's record, for acphost sessions and acphost cancel.
	turnSince time.Time
	released  bool
}

// starting notes how to cancel the agent's start.
func (l *liveSession) starting(cancel context.CancelFunc) {
	l.mu.Lock()
	l.startCancel = cancel
	l.mu.Unlock()
}

// started notes the agent, nil when it did not start.
func (l *liveSession) started(client *acphost.ACPClient) {
	l.mu.Lock()
	l.client = client
	l.mu.Unlock()
}

// agent returns the agent and how to cancel its start, for closing them.
func (l *liveSession) agent() (*acphost.ACPClient, context.CancelFunc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.client, l.startCancel
}

func (l *liveSession) session() *acphost.Session {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sess
}

// use makes sess the one prompts go to; left is the record of the session
// left behind, when it had been written.
func (l *liveSession) use(sess *acphost.Session) (left *state.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess == sess {
		return nil
	}
	if l.rec.ID != sess.ID() {
		if l.rec.ID != "" { // written once: let go of it
			old := l.rec
			left = &old
		}
		l.rec = state.Record{}
	}
	l.sess = sess
	return left
}

// adopted takes r as the current session's record (a continued session).
func (l *liveSession) adopted(r state.Record) {
	l.mu.Lock()
	l.rec = r
	l.mu.Unlock()
}

// current returns the session and its record as last written.
func (l *liveSession) current() (*acphost.Session, state.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sess, l.rec
}

// stamp sets what r says of this process: its pid, the running turn's
// start and the control socket, or none once released.
func (l *liveSession) stamp(r *state.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.PID, r.TurnSince, r.Control = os.Getpid(), l.turnSince, l.controlPath()
	if l.released {
		r.PID, r.TurnSince, r.Control = 0, time.Time{}, ""
	}
}

// written takes r as sess's record, unless another session is current by
// now.
func (l *liveSession) written(sess *acphost.Session, r state.Record) {
	l.mu.Lock()
	if l.sess == sess {
		l.rec = r
	}
	l.mu.Unlock()
}

// release notes that this process no longer has its session open.
func (l *liveSession) release() {
	l.mu.Lock()
	l.released, l.turnSince = true, time.Time{}
	l.mu.Unlock()
}

// open returns the current session's id and whether it was released.
func (l *liveSession) open() (id string, released bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess != nil {
		id = l.sess.ID()
	}
	return id, l.released
}

// beginTurn notes a turn that cancel cancels.
func (l *liveSession) beginTurn(cancel context.CancelFunc) {
	l.mu.Lock()
	l.turnCancel, l.interrupted = cancel, false
	l.permFail = ""
	l.turnSince = time.Now()
	l.mu.Unlock()
}

// endTurn notes the turn's end, and returns whether it was interrupted
// and which permission request ended it (see failTurn).
func (l *liveSession) endTurn() (interrupted bool, permFail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turnCancel = nil
	l.turnSince = time.Time{}
	return l.interrupted, l.permFail
}

// interrupt marks the running turn interrupted and returns its cancel,
// nil when no turn runs or it was already interrupted.
func (l *liveSession) interrupt() context.CancelFunc {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.turnCancel == nil || l.interrupted {
		return nil
	}
	l.interrupted = true
	return l.turnCancel
}

// failTurn notes that the permission request what ended the turn (the
// first one does) and returns the turn's cancel, nil between turns.
func (l *liveSession) failTurn(what string) context.CancelFunc {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.permFail == "" {
		l.permFail = what
	}
	return l.turnCancel
}

// listening notes the control socket.
func (l *liveSession) listening(ctl *control.Server) {
	l.mu.Lock()
	l.ctl = ctl
	l.mu.Unlock()
}

// control returns the control socket, nil without one.
func (l *liveSession) control() *control.Server {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ctl
}

// controlPath is the control socket's path, "" without one; l.mu is held.
func (l *liveSession) controlPath() string {
	if l.ctl == nil {
		return ""
	}
	return l.ctl.Path
}
