package acphost

import (
	"bytes"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// goid returns the current goroutine's id. It is used only off the
// per-update path: to recognise calls made from the library's own callback
// goroutines, which would otherwise deadlock.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// callbacks runs an agent's user code (safely, userCall) and records which
// goroutines are running it.
type callbacks struct {
	mu         sync.Mutex
	dispatcher uint64
	running    map[uint64][]string // goroutine → the sessions it runs callbacks for, innermost last
	turns      map[uint64][]string // callback goroutine → the sessions whose turns it runs or waits for
	// inUser counts user code running (on any of the agent's goroutines), so
	// that the goroutine id is read only when a call could come from there.
	inUser atomic.Int32
	log    *slog.Logger // where a panic in user code is reported
}

// userCall runs user code for session on goroutine id, which is not the
// dispatcher: it is recorded as a callback goroutine (see callbacks) and a
// panic becomes an error. Reading the id costs a stack trace, cheapest where
// the stack is short: a goroutine that calls user code on every run reads
// it at its top.
func (cb *callbacks) userCall(id uint64, session, what string, f func()) error {
	defer cb.enter(id, session)()
	return cb.safely(what, f)
}

// safely runs user code, turning a panic into a logged error so one bad
// callback cannot take the host down.
func (cb *callbacks) safely(what string, f func()) (err error) {
	cb.inUser.Add(1)
	defer func() {
		cb.inUser.Add(-1)
		if r := recover(); r != nil {
			err = fmt.Errorf("acphost: %s panicked: %v", what, r)
			cb.log.Error("acphost: callback panicked", "callback", what, "panic", r)
		}
	}()
	f()
	return nil
}

// fromDispatcher reports whether the caller is the dispatcher running user
// code (OnUpdate, emit).
func (cb *callbacks) fromDispatcher() bool {
	return cb.inUser.Load() > 0 && cb.onDispatcher(goid())
}

// enter marks goroutine id (the caller's) as running user code for
// session; call the result when it returns.
func (cb *callbacks) enter(id uint64, session string) (leave func()) {
	cb.mu.Lock()
	if cb.running == nil {
		cb.running = map[uint64][]string{}
	}
	cb.running[id] = append(cb.running[id], session)
	cb.mu.Unlock()
	return func() {
		cb.mu.Lock()
		if s := cb.running[id]; len(s) > 1 {
			cb.running[id] = s[:len(s)-1]
		} else {
			delete(cb.running, id)
		}
		cb.mu.Unlock()
	}
}

// callerID is the calling goroutine's id when it may be running user code
// of this agent, else 0: for turns that run on a goroutine of their own on
// the caller's behalf (Stream).
func (cb *callbacks) callerID() uint64 {
	if cb.inUser.Load() == 0 {
		return 0
	}
	return goid()
}

// enterTurn is called as caller (0: the calling goroutine) starts a turn
// of session (busy: a turn of it is running or queued). It reports whether
// that turn would wait for the caller itself: the caller is the dispatcher
// running user code, or a callback goroutine that the session's running
// turn waits for, directly (it serves that session) or through a chain of
// sessions (it serves T, whose turn was started from a callback serving
// the session, and so on). Otherwise, for a callback goroutine, it records
// the turn until leave.
func (cb *callbacks) enterTurn(session string, busy bool, caller uint64) (leave func(), reentrant bool) {
	if cb.inUser.Load() == 0 {
		return func() {}, false
	}
	id := caller
	if id == 0 {
		id = goid()
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	switch {
	case id == cb.dispatcher:
		return nil, true
	case len(cb.running[id]) == 0: // not user code of ours: nothing can wait for it
		return func() {}, false
	case busy && cb.waitsFor(session, id):
		return nil, true
	}
	if cb.turns == nil {
		cb.turns = map[uint64][]string{}
	}
	cb.turns[id] = append(cb.turns[id], session)
	return func() {
		cb.mu.Lock()
		defer cb.mu.Unlock()
		if s := cb.turns[id]; len(s) > 1 {
			cb.turns[id] = s[:len(s)-1]
		} else {
			delete(cb.turns, id)
		}
	}, false
}

// waitsFor reports whether the running turn of session waits, directly or
// through other sessions' turns, for callback goroutine id. A turn waits
// for the callbacks serving its session; a callback waits for the turns it
// started. cb.mu is held.
func (cb *callbacks) waitsFor(session string, id uint64) bool {
	seen := map[string]bool{session: true}
	for queue := []string{session}; len(queue) > 0; queue = queue[1:] {
		for g, serving := range cb.running {
			if !slices.Contains(serving, queue[0]) {
				continue
			}
			if g == id {
				return true
			}
			for _, next := range cb.turns[g] {
				if !seen[next] {
					seen[next] = true
					queue = append(queue, next)
				}
			}
		}
	}
	return false
}

func (cb *callbacks) setDispatcher(id uint64) {
	cb.mu.Lock()
	cb.dispatcher = id
	cb.mu.Unlock()
}

// onDispatcher reports whether id is the dispatcher goroutine.
func (cb *callbacks) onDispatcher(id uint64) bool {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return id != 0 && id == cb.dispatcher
}

// inCallback reports whether id runs user code of this agent.
func (cb *callbacks) inCallback(id uint64) bool {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return (id != 0 && id == cb.dispatcher) || len(cb.running[id]) > 0
}
